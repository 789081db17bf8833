// The display template's live preview: the server lays the sample item out with the template
// (the annotators' code, POST to the section's data-preview-url) and the annotator page's own
// renderDisplay draws it. Every text is written with textContent: payload text stays inert.
import { csrfToken } from "../annotation/annotate/api.js";
import { renderDisplay } from "../annotation/annotate/item.js";

const WAIT_MS = 300;  // after the last keystroke

function main() {
  const section = document.getElementById("template-preview");
  if (!section) { return; }
  const template = document.getElementById(section.dataset.templateField);
  const sample = document.getElementById("sample-item");
  const item = document.getElementById("preview-item");
  const problems = document.getElementById("preview-problems");
  let timer = null;
  let asked = 0;

  function showProblems(list) {
    problems.replaceChildren(...list.map((text) => {
      const li = document.createElement("li");
      li.textContent = text;
      return li;
    }));
    problems.hidden = list.length === 0;
  }

  async function refresh() {
    const mine = ++asked;
    const body = new FormData();
    body.append("display_template", template ? template.value : "");
    body.append("sample", sample.value);
    let data = null;
    try {
      const response = await fetch(section.dataset.previewUrl, {
        method: "POST",
        body,
        headers: {"X-CSRFToken": csrfToken()},
        credentials: "same-origin",
      });
      data = await response.json();
    } catch (error) {
      data = {display: null, problems: ["The preview could not be reached."]};
    }
    if (mine !== asked) { return; }  // a later edit was sent meanwhile
    showProblems(data.problems || []);
    item.replaceChildren(data.display ? renderDisplay(data.display) : "");
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(refresh, WAIT_MS);
  }

  if (template) { template.addEventListener("input", later); }
  sample.addEventListener("input", later);
  refresh();
}

main();
