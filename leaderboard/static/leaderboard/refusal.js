// The organize pages' refusal banner (leaderboard/_refusal.html): focused as the page opens, so
// that the reader, and a screen reader, start at what was refused and why. A link of the banner
// to an element of the page moves the focus there (a fragment link alone only scrolls), opening
// the <details> it is folded in and showing the field's label with it.
function focusTarget(target) {
  for (let fold = target.closest("details"); fold; fold = fold.parentElement.closest("details")) {
    fold.open = true;
  }
  const label = target.id ? document.querySelector(`label[for="${CSS.escape(target.id)}"]`) : null;
  (label || target).scrollIntoView({block: "start"});
  if (!target.matches("a[href], button, input, select, textarea, [tabindex]")) {
    target.setAttribute("tabindex", "-1");
  }
  target.focus({preventScroll: true});
}

function main() {
  const banner = document.getElementById("refusal");
  if (!banner) { return; }
  banner.focus();
  banner.addEventListener("click", (event) => {
    const link = event.target.closest("a[href^='#']");
    if (!link) { return; }
    const target = document.getElementById(decodeURIComponent(link.hash.slice(1)));
    if (!target) { return; }
    event.preventDefault();
    history.replaceState(null, "", link.hash);
    focusTarget(target);
  });
}

main();
