"use strict";
// Draws the report from the JSON data inlined in the page: tables, the
// diff text and icicle flame graphs (root at the top), each frame a box
// whose width is its share of the zoomed-into frame.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const names = data.names;
  const report = document.getElementById("report");
  const contents = document.getElementById("contents");
  const ROW = 17;
  // `#search=TEXT` and `#zoom=NAME` in the page's address fill the search
  // box and zoom into the first frame so named, in every flame graph: a
  // link can show one frame, and a headless browser can check both.
  const asked = {};
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    const at = part.indexOf("=");
    if (at > 0) asked[part.slice(0, at)] = decodeURIComponent(part.slice(at + 1));
  }

  document.getElementById("header").textContent =
    data.header + (data.options ? " \u2014 " + data.options : "");

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  let sections = 0;
  function section(title, note) {
    const id = "section-" + (++sections);
    const h = el("h2", "", title);
    h.id = id;
    report.appendChild(h);
    const link = el("a", "", title);
    link.href = "#" + id;
    contents.appendChild(link);
    if (note) report.appendChild(el("p", "note", note));
    return report;
  }

  function formatted(v) {
    return typeof v === "number" ? v.toLocaleString("en-US") : String(v);
  }

  for (const text of data.texts) {
    section(text.title).appendChild(el("pre", "", text.text));
  }

  for (const flame of data.flames) {
    const pct = (flame.share * 100).toFixed(2);
    const note = "Total " + formatted(flame.total) + " " + flame.unit +
      "; frames under " + pct + "% of the total are merged.";
    drawFlame(section(flame.title, note), flame);
  }

  for (const table of data.tables) {
    drawTable(section(table.title, table.note), table);
  }

  function drawTable(parent, table) {
    const box = el("div", "scroll");
    const t = el("table");
    const head = el("tr");
    for (const c of table.columns) head.appendChild(el("th", "", c));
    t.appendChild(el("thead")).appendChild(head);
    const body = el("tbody");
    for (const row of table.rows) {
      const tr = el("tr");
      row.forEach(function (cell, i) {
        const numeric = typeof cell === "number" || /^[0-9.]+%$/.test(cell);
        tr.appendChild(el("td", numeric ? "num" : (i === 0 ? "name" : ""), formatted(cell)));
      });
      body.appendChild(tr);
    }
    t.appendChild(body);
    box.appendChild(t);
    parent.appendChild(box);
  }

  function hue(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return h;
  }

  function colour(node, diff) {
    if (diff) {
      const value = node[1], base = node[2];
      const change = (value - base) / Math.max(value, base, 1);
      const fade = Math.round(235 - 160 * Math.abs(change));
      return change >= 0 ? "rgb(255," + fade + "," + fade + ")" : "rgb(" + fade + "," + fade + ",255)";
    }
    const h = hue(names[node[0]]);
    return "hsl(" + (h % 55) + ", 85%, " + (60 + (h >> 8) % 20) + "%)";
  }

  function drawFlame(parent, flame) {
    const bar = el("div", "flame-bar");
    const search = el("input");
    search.type = "search";
    search.placeholder = "Search (a part of a name)";
    const reset = el("button", "", "Reset zoom");
    const status = el("span", "note");
    bar.appendChild(search);
    bar.appendChild(reset);
    bar.appendChild(status);
    const graph = el("div", "flame");
    parent.appendChild(bar);
    parent.appendChild(graph);
    const zoomed = [flame.root];

    function matched(node, term) {
      if (names[node[0]].indexOf(term) >= 0) return node[1];
      let sum = 0;
      for (const c of node[3]) sum += matched(c, term);
      return sum;
    }

    function render() {
      const root = zoomed[zoomed.length - 1];
      const term = search.value;
      const total = Math.max(root[1], 1);
      const width = graph.clientWidth || 1200;
      graph.textContent = "";
      let depth = 0;
      function place(node, x, level) {
        const w = node[1] / total;
        if (w * width < 2) return;
        const name = names[node[0]];
        const box = el("div", "frame", name);
        box.style.left = (x * 100) + "%";
        box.style.width = (w * 100) + "%";
        box.style.top = (level * ROW) + "px";
        box.style.background = colour(node, flame.diff);
        let tip = name + "\n" + formatted(node[1]) + " " + flame.unit + " (" +
          (node[1] * 100 / Math.max(flame.root[1], 1)).toFixed(2) + "% of all)";
        if (flame.diff) tip += "\nbase: " + formatted(node[2]) + ", change: " + formatted(node[1] - node[2]);
        box.title = tip;
        if (term && name.indexOf(term) >= 0) box.classList.add("hit");
        box.addEventListener("click", function () {
          if (node === root && zoomed.length > 1) zoomed.pop();
          else if (node !== root) zoomed.push(node);
          render();
        });
        graph.appendChild(box);
        depth = Math.max(depth, level);
        let at = x;
        for (const c of node[3]) {
          place(c, at, level + 1);
          at += c[1] / total;
        }
      }
      place(root, 0, 0);
      graph.style.height = ((depth + 1) * ROW + 2) + "px";
      status.textContent = term
        ? "matched: " + (matched(flame.root, term) * 100 / Math.max(flame.root[1], 1)).toFixed(2) + "% of all"
        : "";
    }

    function find(node, name) {
      if (names[node[0]] === name) return [node];
      for (const c of node[3]) {
        const path = find(c, name);
        if (path) return [node].concat(path);
      }
      return null;
    }

    if (asked.search) search.value = asked.search;
    const path = asked.zoom ? find(flame.root, asked.zoom) : null;
    if (path) zoomed.push.apply(zoomed, path.slice(1));
    search.addEventListener("input", render);
    reset.addEventListener("click", function () {
      zoomed.length = 1;
      render();
    });
    render();
  }
})();
