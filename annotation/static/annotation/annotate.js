// Keyboard shortcuts for the annotator page: each button's data-key answers the item.
// A form is sent at most once; the server is idempotent anyway (client_id), so a second
// submission would only cost a round trip.
(function () {
  "use strict";
  var form = document.getElementById("judgment-form");
  if (!form) { return; }
  var shownAt = Date.now();
  var sent = false;

  form.addEventListener("submit", function (event) {
    if (sent) { event.preventDefault(); return; }
    sent = true;
    form.elements.seconds_spent.value = ((Date.now() - shownAt) / 1000).toFixed(1);
    // Disable after the browser has built the form data, so the pressed button's value is sent.
    setTimeout(function () {
      form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    }, 0);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
      return;
    }
    var button = form.querySelector('button[data-key="' + event.key.toLowerCase() + '"]');
    if (!button) { return; }
    event.preventDefault();
    if (form.requestSubmit) { form.requestSubmit(button); } else { button.click(); }
  });
}());
