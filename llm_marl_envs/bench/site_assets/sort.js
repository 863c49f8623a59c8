// Sortable tables: a click on a column header orders the rows by each cell's data-sort value
// (numbers as numbers, text as text), again to reverse. Runs from file://, no libraries.
(function () {
  "use strict";
  function value(row, index, numeric) {
    var raw = row.cells[index].getAttribute("data-sort");
    if (raw === null || raw === "") return null;
    return numeric ? parseFloat(raw) : raw.toLowerCase();
  }
  function sortBy(table, index, header) {
    var numeric = header.getAttribute("data-type") === "num";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a, index, numeric), y = value(b, index, numeric);
      if (x === y) return 0;
      if (x === null) return 1;  // empty cells last, either way
      if (y === null) return -1;
      return (x < y ? -1 : 1) * (ascending ? 1 : -1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.setAttribute("aria-sort", "none");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      header.addEventListener("click", function () { sortBy(table, index, header); });
    });
  });
  window.__leaderboardReady = performance.now();
})();
