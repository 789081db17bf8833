// The task page's live preview on the organize page: each Markdown field (data-markdown-preview)
// is sent to the form's data-preview-url as the reader will see it, and drawn below the field.
// The server renders with raw HTML off and sanitises the result (leaderboard/page_text.py), and
// the page's Content-Security-Policy runs no inline script whatever the HTML holds.
import { csrfToken } from "../annotation/annotate/api.js";

const WAIT_MS = 300;  // after the last keystroke

function previewOf(form, field) {
  const target = document.getElementById(`${field.id}-preview`);
  let timer = null;
  let asked = 0;

  async function refresh() {
    const mine = ++asked;
    const body = new FormData();
    body.append("text", field.value);
    let html = "";
    try {
      const response = await fetch(form.dataset.previewUrl, {
        method: "POST",
        body,
        headers: {"X-CSRFToken": csrfToken()},
        credentials: "same-origin",
      });
      html = (await response.json()).html || "";
    } catch (error) {
      html = "";
    }
    if (mine !== asked) { return; }  // a later edit was sent meanwhile
    target.innerHTML = html;
    target.hidden = html === "";
  }

  field.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, WAIT_MS);
  });
  if (field.value.trim()) { refresh(); }
}

function main() {
  for (const form of document.querySelectorAll("form[data-preview-url]")) {
    for (const field of form.querySelectorAll("textarea[data-markdown-preview]")) {
      previewOf(form, field);
    }
  }
}

main();
