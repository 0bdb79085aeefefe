// Each table with a search box and a failures-only toggle: a row shows when it holds every word
// typed (case-insensitive) and, with the toggle on, when it is a failure (class "failing").
document.querySelectorAll("table.searchable, table.toggled").forEach(function (table) {
  var box = document.querySelector('input.filter[data-table="' + table.id + '"]');
  var only = document.querySelector('input.only-failures[data-table="' + table.id + '"]');
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var texts = rows.map(function (row) { return row.textContent.toLowerCase(); });
  function apply() {
    var words = box ? box.value.toLowerCase().split(/\s+/).filter(Boolean) : [];
    var failuresOnly = only ? only.checked : false;
    rows.forEach(function (row, i) {
      var found = words.every(function (w) { return texts[i].indexOf(w) !== -1; });
      row.hidden = !found || (failuresOnly && !row.classList.contains("failing"));
    });
  }
  if (box) box.addEventListener("input", apply);
  if (only) only.addEventListener("change", apply);
});
