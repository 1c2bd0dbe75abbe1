// The macro editor (/macros/<id>/): a placeholder button types itself where the cursor is, in
// the text box last focused (the default text, or one of its language versions).
(function () {
  "use strict";
  const form = document.getElementById("macro-edit-form");
  if (!form) return;
  const boxes = form.querySelectorAll("textarea");
  let box = boxes[0];
  boxes.forEach(function (area) {
    area.addEventListener("focus", function () { box = area; });
  });
  form.querySelectorAll("[data-placeholder]").forEach(function (chip) {
    chip.addEventListener("click", function () {
      const text = "{{ " + chip.dataset.placeholder + " }}";
      const start = box.selectionStart ?? box.value.length;
      const end = box.selectionEnd ?? start;
      box.value = box.value.slice(0, start) + text + box.value.slice(end);
      box.focus();
      box.selectionStart = box.selectionEnd = start + text.length;
    });
  });
})();
