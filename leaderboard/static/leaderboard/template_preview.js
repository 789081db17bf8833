// The display template's live preview: the server lays the sample item out with the template
// (the annotators' code, POST to the section's data-preview-url) and the annotator page's own
// renderDisplay draws it. The template's problems, and the fields it names that the sample item
// does not have (a misspelt field), are written in red under the template's field, and those
// fields' rows are flagged; the sample's own problems are listed under the preview. Every text
// is written with textContent: payload text stays inert.
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
  const fieldBox = template ? template.closest(".field") : null;
  const fieldCheck = document.createElement("div");
  fieldCheck.className = "field-error template-check";
  fieldCheck.id = "template-check";
  fieldCheck.setAttribute("aria-live", "polite");
  fieldCheck.hidden = true;
  if (fieldBox) { fieldBox.appendChild(fieldCheck); }
  let timer = null;
  let asked = 0;

  // `box` shows the texts of `list`, one `tag` element each (hidden when there is none).
  function show(box, list, tag) {
    box.replaceChildren(...list.map((text) => {
      const line = document.createElement(tag);
      line.textContent = text;
      return line;
    }));
    box.hidden = list.length === 0;
  }

  // A row of a field the sample item does not have gets a word, not only an empty cell.
  function flagMissing(names) {
    const missing = new Set(names);
    item.querySelectorAll("tr[data-field]").forEach((row) => {
      if (!missing.has(row.dataset.field)) { return; }
      row.classList.add("missing-field");
      const flag = document.createElement("span");
      flag.className = "missing-flag";
      flag.textContent = "not in the sample item";
      row.querySelector("th").appendChild(flag);
    });
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
      data = {display: null, sample_problems: ["The preview could not be reached."]};
    }
    if (mine !== asked) { return; }  // a later edit was sent meanwhile
    show(problems, data.sample_problems || [], "li");
    // Under the template's field, in red: its problems, then the fields the sample lacks.
    show(fieldCheck, [...(data.template_problems || []), ...(data.warnings || [])], "p");
    item.replaceChildren(data.display ? renderDisplay(data.display) : "");
    flagMissing(data.missing_fields || []);
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
