// Sortable tables for the leaderboard site. A click on a column header of a table.sortable
// orders its rows by each cell's data-sort value: numbers as numbers (data-type="num"), text
// as text; a second click reverses. Cells with an empty data-sort (no score) stay last either
// way, and rows that compare equal keep their order. The header's aria-sort says the order.
// No libraries, no network: it runs from file://. At the end it sets window.__leaderboardReady
// (milliseconds since navigation start) so tests and benchmarks can tell it is interactive.
(function () {
  "use strict";

  function keys(rows, index, numeric) {
    return rows.map(function (row, position) {
      var raw = row.cells[index].getAttribute("data-sort");
      var value = raw === null || raw === "" ? null : numeric ? parseFloat(raw) : raw.toLowerCase();
      if (numeric && value !== null && isNaN(value)) value = null;
      return { row: row, value: value, position: position };
    });
  }

  function sortBy(table, index, header) {
    var numeric = header.getAttribute("data-type") === "num";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var sign = ascending ? 1 : -1;
    var body = table.tBodies[0];
    var items = keys(Array.prototype.slice.call(body.rows), index, numeric);
    items.sort(function (a, b) {
      if (a.value === b.value) return a.position - b.position;
      if (a.value === null) return 1;
      if (b.value === null) return -1;
      return (a.value < b.value ? -1 : 1) * sign;
    });
    var fragment = document.createDocumentFragment();
    items.forEach(function (item) { fragment.appendChild(item.row); });
    body.appendChild(fragment);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.setAttribute("aria-sort", cell === header ? (ascending ? "ascending" : "descending") : "none");
    });
    table.setAttribute("data-sorted-by", String(index));
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      header.addEventListener("click", function () { sortBy(table, index, header); });
    });
  });
  document.documentElement.classList.add("js");
  window.__leaderboardReady = performance.now();
})();
