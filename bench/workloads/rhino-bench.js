// Workload "rhino": Mozilla Rhino (Debian package rhino) runs two third-party JavaScript
// programs from Debian packages, with inputs fixed by a seeded generator:
//   1. esprima (node-esprima) parses jQuery (libjs-jquery) with tokens and locations, and
//      parses a seeded, generated JavaScript program; every AST is walked and hashed;
//   2. marked (libjs-marked) renders a seeded, generated Markdown document to HTML.
// Prints "checksum=<hex>" (FNV-1a over everything produced), identical on every run.
//
// Usage: rhino-bench.js ESPRIMA_JS MARKED_JS JQUERY_JS [SCALE]

var window = this; // esprima's UMD header looks for `window`
load(arguments[0]);
load(arguments[1]);
var jquery = readFile(arguments[2]);
var scale = arguments.length > 3 ? parseInt(arguments[3], 10) : 1;

// FNV-1a, 32 bits, over strings and numbers.
var hash = 0x811c9dc5;
function mix(value) {
    var s = String(value);
    for (var i = 0; i < s.length; i++) {
        hash ^= s.charCodeAt(i);
        hash = Math.imul(hash, 0x01000193) >>> 0;
    }
}

// mulberry32: a small seeded generator, so every run builds the same inputs.
function rng(seed) {
    var a = seed >>> 0;
    return function () {
        a = (a + 0x6D2B79F5) >>> 0;
        var t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
function pick(r, list) { return list[Math.floor(r() * list.length)]; }

// Walk an esprima AST; count node types, hash types and literal values.
function walk(node, counts) {
    if (node === null || typeof node !== 'object') return;
    if (node instanceof Array) {
        for (var i = 0; i < node.length; i++) walk(node[i], counts);
        return;
    }
    if (typeof node.type === 'string') {
        counts[node.type] = (counts[node.type] || 0) + 1;
        if (node.type === 'Identifier') mix(node.name);
        if (node.type === 'Literal') mix(node.raw);
    }
    for (var key in node) {
        if (key !== 'loc' && key !== 'range' && Object.prototype.hasOwnProperty.call(node, key)) {
            walk(node[key], counts);
        }
    }
}
function hashCounts(counts) {
    var keys = Object.keys(counts).sort();
    for (var i = 0; i < keys.length; i++) { mix(keys[i]); mix(counts[keys[i]]); }
}

// A seeded, generated JavaScript program: functions, loops, objects, closures.
function generateProgram(r, functions) {
    var out = [];
    var ops = ['+', '-', '*', '%', '&', '|', '^', '<<', '>>>'];
    for (var f = 0; f < functions; f++) {
        out.push('function f' + f + '(a, b, c) {');
        out.push('  var acc = ' + Math.floor(r() * 1000) + ', o = {x: a, y: [b, c, "s' + f + '"]};');
        var stmts = 3 + Math.floor(r() * 8);
        for (var s = 0; s < stmts; s++) {
            var k = Math.floor(r() * 5);
            if (k === 0) out.push('  for (var i = 0; i < ' + Math.floor(r() * 50) + '; i++) { acc = (acc ' + pick(r, ops) + ' i) | 0; }');
            else if (k === 1) out.push('  if (a ' + pick(r, ['<', '>', '===', '!==']) + ' b) { acc += o.y.length; } else { acc -= c; }');
            else if (k === 2) out.push('  o["k' + s + '"] = function (z) { return z ' + pick(r, ops) + ' acc; };');
            else if (k === 3) out.push('  acc = [a, b, c].map(function (v) { return v * ' + Math.floor(r() * 9) + '; }).reduce(function (p, q) { return p + q; }, acc);');
            else out.push('  switch (acc & 3) { case 0: acc++; break; case 1: acc--; break; default: acc = acc >> 1; }');
        }
        out.push('  return acc;');
        out.push('}');
    }
    return out.join('\n');
}

// A seeded, generated Markdown document using most of marked's block and inline rules.
function generateMarkdown(r, sections) {
    var words = ['profiler', 'heap', 'sample', 'trace', 'thread', 'monitor', 'class', 'site',
                 'allocation', 'frame', 'dump', 'agent', 'option', 'interval', 'depth', 'cutoff'];
    function sentence(n) {
        var w = [];
        for (var i = 0; i < n; i++) {
            var word = pick(r, words), d = r();
            if (d < 0.05) word = '*' + word + '*';
            else if (d < 0.08) word = '**' + word + '**';
            else if (d < 0.11) word = '`' + word + '()`';
            else if (d < 0.13) word = '[' + word + '](https://example.org/' + word + ')';
            w.push(word);
        }
        return w.join(' ') + '.';
    }
    var md = [];
    for (var s = 0; s < sections; s++) {
        md.push('## Section ' + s + ': ' + sentence(3), '');
        md.push(sentence(20 + Math.floor(r() * 40)), '');
        md.push('- ' + sentence(6), '- ' + sentence(8), '  - ' + sentence(5), '');
        md.push('| option | value | note |', '|---|---:|:---|');
        for (var row = 0; row < 4; row++) md.push('| ' + pick(r, words) + ' | ' + Math.floor(r() * 1e6) + ' | ' + sentence(4) + ' |');
        md.push('', '```java', 'int x' + s + ' = ' + Math.floor(r() * 100) + ';', '```', '');
        md.push('> ' + sentence(12), '', '1. ' + sentence(5), '2. ' + sentence(7), '');
    }
    return md.join('\n');
}

var t0 = Date.now();
var jqueryRounds = 3 * scale;
var tokens = 0;
for (var round = 0; round < jqueryRounds; round++) {
    var ast = esprima.parseScript(jquery, { range: true, loc: true, tokens: true, comment: true });
    var counts = {};
    walk(ast, counts);
    hashCounts(counts);
    tokens += ast.tokens.length;
}
mix(tokens);
var t1 = Date.now();

var r = rng(20240607);
var generatedNodes = 0;
for (var p = 0; p < 2 * scale; p++) {
    var program = generateProgram(r, 1500);
    var counts2 = {};
    walk(esprima.parseScript(program), counts2);
    hashCounts(counts2);
    generatedNodes += Object.keys(counts2).length;
}
var t2 = Date.now();

var html = marked.parse(generateMarkdown(rng(42), 1000 * scale));
mix(html);
var t3 = Date.now();

print('rhino: jquery tokens=' + tokens + ' (' + (t1 - t0) + ' ms), generated programs (' +
      (t2 - t1) + ' ms), markdown html=' + html.length + ' chars (' + (t3 - t2) + ' ms)');
print('checksum=' + ('00000000' + hash.toString(16)).slice(-8));
