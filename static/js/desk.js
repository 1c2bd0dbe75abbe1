// Small helpers shared by the desk's pages and admin. Each one only adds to a page that already
// works without JavaScript.
(function () {
  "use strict";

  // <button data-copy="value">: copy a value shown shortened (a fingerprint, an id).
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (!button || !navigator.clipboard) return;
    event.preventDefault();
    const label = button.textContent;
    navigator.clipboard.writeText(button.dataset.copy).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });

  // <form data-confirm="question">: ask once more before a decision that cannot be undone. The
  // server still requires the form's own confirmation field.
  document.addEventListener("submit", function (event) {
    const form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  // --- Tables on a phone: each cell carries its column's name (data-label), which the
  // stylesheet shows before the value when a row is stacked (desk.css, "Tables on a phone").
  // Rows added later (a list refreshing, the assistant's trail) are labelled as they come.
  function labelCells() {
    document.querySelectorAll("table.grid").forEach(function (table) {
      const heads = Array.from(table.querySelectorAll("thead th")).map(function (th) {
        return th.textContent.trim();
      });
      if (!heads.length) return;
      table.querySelectorAll("tbody tr").forEach(function (row) {
        let column = 0;
        Array.from(row.children).forEach(function (cell) {
          const span = cell.colSpan || 1;
          // A cell across several columns (an empty list's note, a form) has no one name.
          if (!cell.hasAttribute("data-label")) cell.dataset.label = span === 1 ? (heads[column] || "") : "";
          column += span;
        });
      });
    });
  }
  let labelling = false;
  function labelSoon() {
    if (labelling) return;
    labelling = true;
    requestAnimationFrame(function () { labelling = false; labelCells(); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", labelCells);
  else labelCells();
  new MutationObserver(function (changes) {
    if (changes.some(function (change) { return change.addedNodes.length; })) labelSoon();
  }).observe(document.documentElement, {childList: true, subtree: true});
})();
