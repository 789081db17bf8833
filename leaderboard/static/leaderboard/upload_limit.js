// The submit page refuses a run file over the task's byte limit before sending it, in the words
// the server would use (leaderboard.services.runs.check_size): a browser no longer sends 125 MB
// to be told it is too large. The server still checks every upload.

// leaderboard.ingestion.human_bytes: 1536 -> "1.5 KiB", 512 * 2**20 -> "512 MiB". A size over
// a power of 1024 is a dyadic fraction, so tenths are exact and ties round half to even, as
// Python's format does.
export function humanBytes(n) {
  if (n < 1024) {
    return `${Math.trunc(n).toLocaleString("en-US")} bytes`;
  }
  const units = ["KiB", "MiB", "GiB", "TiB"];
  for (const [k, unit] of units.entries()) {
    n /= 1024;
    if (n < 1024 || k === units.length - 1) {
      const tenths = n * 10;
      let whole = Math.floor(tenths);
      const rest = tenths - whole;
      if (rest > 0.5 || (rest === 0.5 && whole % 2 === 1)) {
        whole += 1;
      }
      const integer = Math.floor(whole / 10).toLocaleString("en-US");
      const digit = whole % 10;
      return `${integer}${digit ? `.${digit}` : ""} ${unit}`;
    }
  }
  return "";
}

export function tooLargeMessage(size, limit, task) {
  return `the file is ${humanBytes(size)}, over the limit of ${humanBytes(limit)} for task '${task}'`;
}

function wire(form) {
  const limit = Number(form.dataset.maxBytes);
  const input = form.querySelector('input[type="file"]');
  const box = document.getElementById("size-error");
  if (!input || !box || !Number.isFinite(limit)) {
    return;
  }
  const tooLarge = () => {
    const file = input.files && input.files[0];
    return file && file.size > limit ? tooLargeMessage(file.size, limit, form.dataset.task) : "";
  };
  const show = (message) => {
    box.hidden = !message;
    box.replaceChildren();
    if (message) {
      const line = document.createElement("p");
      const lead = document.createElement("strong");
      lead.textContent = "Your run was not sent:";
      line.append(lead, ` ${message}; nothing was uploaded or counted.`);
      box.append(line);
    }
  };
  input.addEventListener("change", () => show(tooLarge()));
  form.addEventListener("submit", (event) => {
    const message = tooLarge();
    if (message) {
      event.preventDefault();
      show(message);
      input.focus();
    }
  });
}

const form = document.getElementById("run-upload");
if (form) {
  wire(form);
}
