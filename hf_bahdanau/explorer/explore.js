// The alignment explorer's script (page.py embeds it in every page it writes). It reads the items from the page's
// JSON element #explorer-data and draws one page of them at a time: a model's sentences and their alignments
// (data.kind "alignments", data.sentences), a memory network's questions and their hops (data.kind "memory",
// data.questions; memory_page.py), or an image-to-text model's images and its attention over their regions
// (data.kind "image_text", data.examples; image_page.py). Every text from the data goes in with textContent, never as
// HTML.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("explorer-data").textContent);
  const BLANK = "\u2423"; // how a whitespace token is shown
  const ATTENDED = 0.005; // a source token is highlighted when its weight shows as at least 0.01
  const DARK = 0.6; // a memory weight's text is white on shades at least this dark
  const IMAGE_SIZE = 480; // images are magnified (by a whole factor, at most 8) until their longer side nears this
  const KINDS = { // what the page lists, its noun, and how one item is drawn
    alignments: { items: data.sentences, noun: "sentences", view: sentenceView },
    memory: { items: data.questions, noun: "questions", view: questionView },
    image_text: { items: data.examples, noun: "images", view: imageView },
  };
  const kind = KINDS[data.kind];
  const wrongItems = kind.items.filter((item) => item.correct === false);
  const state = { page: 0, onlyWrong: false, pinned: new Map() }; // pinned: item number -> output token index

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function tokenLabel(token) {
    return token.trim() === "" ? BLANK : token;
  }

  function shade(weight) {
    return "rgba(230, 85, 13, " + weight + ")";
  }

  // rows: [name, value, ...]; columns: the headings of the value columns (none: no heading row)
  function fillTable(id, rows, columns = []) {
    const table = document.getElementById(id);
    table.closest("section").hidden = rows.length === 0;
    if (columns.length > 0) {  // every column's heading, the first one's (the row names') included
      const heading = table.createTHead().insertRow();
      for (const column of columns) heading.appendChild(element("th", "column", column));
    }
    const body = table.createTBody();
    for (const [name, ...values] of rows) {
      const row = body.insertRow();
      row.appendChild(element("th", "", name));
      for (const value of values) row.appendChild(element("td", "", value));
    }
  }

  function renderHeader() {
    document.title = data.title;
    document.getElementById("title").textContent = data.title;
    fillTable("model-summary", data.model_summary);
    fillTable("model-metrics", data.model_metrics.rows, data.model_metrics.columns);
    fillTable("page-metrics", data.page_metrics);
    const filter = document.getElementById("only-wrong-filter");
    filter.hidden = !data.has_references;
    if (data.has_references) {
      document.getElementById("counts").textContent = wrongItems.length + " wrong / " + kind.items.length;
    }
  }

  function pinnedToken(item) {
    return state.pinned.has(item.number) ? state.pinned.get(item.number) : null;
  }

  // The output token nodes of an item with token t selected (null: none) and its pinned one marked.
  function markTokens(item, targets, t) {
    const pinned = pinnedToken(item);
    targets.forEach((node, i) => {
      node.classList.toggle("selected", i === t);
      node.classList.toggle("pinned", i === pinned);
    });
  }

  // Hovering over (or focusing) output token t of an item shows it, show(t); leaving it shows the pinned token
  // (null: none); clicking it (or Enter, Space) pins it, or unpins it when it is pinned.
  function bindTokens(item, targets, show) {
    const showPinned = () => show(pinnedToken(item));
    targets.forEach((node, t) => {
      node.addEventListener("mouseenter", () => show(t));
      node.addEventListener("focus", () => show(t));
      node.addEventListener("mouseleave", showPinned);
      node.addEventListener("blur", showPinned);
      node.addEventListener("click", () => {
        if (pinnedToken(item) === t) state.pinned.delete(item.number);
        else state.pinned.set(item.number, t);
        show(t);
      });
      node.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          node.click();
        }
      });
    });
    showPinned();
  }

  // One output token selected (t) or none (null): shade every source token by α[t][j] and print the weights.
  function select(view, t) {
    const sentence = view.sentence;
    markTokens(sentence, view.targets, t);
    view.heatmapRows.forEach((row, i) => row.classList.toggle("selected", i === t));
    view.sources.forEach((node, j) => {
      const weight = t === null ? 0 : sentence.alignment[t][j];
      node.style.backgroundColor = t === null ? "" : shade(weight);
      node.classList.toggle("attended", t !== null && weight >= ATTENDED);
      node.querySelector(".weight").textContent = t === null ? "" : weight.toFixed(2);
      node.title = t === null ? "" : "\u03b1 = " + weight.toFixed(4);
    });
    view.caption.textContent = t === null ? "Hover over an output token; click it to pin." : describe(sentence, t);
  }

  function describe(sentence, t) {
    const row = sentence.alignment[t];
    const strongest = row.indexOf(Math.max(...row));
    let text = "output token " + (t + 1) + " \u201c" + tokenLabel(sentence.target_tokens[t]) +
      "\u201d attends most to source token " + (strongest + 1) + " \u201c" +
      tokenLabel(sentence.source_tokens[strongest]) + "\u201d (\u03b1 = " + row[strongest].toFixed(2) + ")";
    if (sentence.p_gen !== null) {
      text += "; p_gen = " + sentence.p_gen[t].toFixed(2) + " (copied with probability " +
        (1 - sentence.p_gen[t]).toFixed(2) + ")";
    }
    return text + (pinnedToken(sentence) === t ? " \u2014 pinned" : "");
  }

  function sourceToken(token, j) {
    const node = element("span", "token source-token");
    node.dataset.position = j;
    node.appendChild(element("span", "text", tokenLabel(token)));
    node.appendChild(element("span", "weight"));
    return node;
  }

  function outputToken(token, t) {
    const node = element("span", "token target-token");
    node.dataset.position = t;
    node.tabIndex = 0;
    node.appendChild(element("span", "text", tokenLabel(token)));
    return node;
  }

  function targetToken(sentence, token, t) {
    const node = outputToken(token, t);
    if (sentence.p_gen !== null) {
      const meter = element("span", "p-gen");
      meter.title = "p_gen = " + sentence.p_gen[t].toFixed(4);
      const bar = element("span", "p-gen-bar");
      bar.style.width = (100 * sentence.p_gen[t]).toFixed(1) + "%";
      meter.appendChild(bar);
      node.appendChild(meter);
    }
    return node;
  }

  function heatmap(sentence) {
    const table = element("table", "heatmap");
    const header = table.createTHead().insertRow();
    header.appendChild(element("th", "corner"));
    for (const token of sentence.source_tokens) header.appendChild(element("th", "column", tokenLabel(token)));
    const body = table.createTBody();
    sentence.alignment.forEach((weights, t) => {
      const row = body.insertRow();
      const target = tokenLabel(sentence.target_tokens[t]);
      row.appendChild(element("th", "row", target));
      weights.forEach((weight, j) => {
        const cell = row.insertCell();
        cell.style.backgroundColor = shade(weight);
        cell.title = target + " \u2190 " + tokenLabel(sentence.source_tokens[j]) + ": \u03b1 = " + weight.toFixed(4);
      });
    });
    return table;
  }

  // A <tag class=className> holding the nodes children, in order.
  function holding(tag, className, children) {
    const node = element(tag, className);
    node.append(...children);
    return node;
  }

  // An item's text: one line per [label, content] pair, in order; null (an absent reference) gives none.
  function itemText(lines) {
    return holding("div", "sentence-text", lines.filter((line) => line !== null).map(([label, content]) =>
      holding("div", "line", [element("span", "label", label), content])));
  }

  // An item's frame: its number and, with references, whether it is right or wrong.
  function itemArticle(item) {
    const article = element("article", "sentence");
    article.dataset.number = item.number;
    if (item.correct !== null) article.classList.add(item.correct ? "right" : "wrong");
    const head = element("div", "sentence-head");
    head.appendChild(element("span", "number", "#" + item.number));
    if (item.correct !== null) {
      head.appendChild(element("span", "verdict", item.correct ? "\u2713 right" : "\u2717 wrong"));
    }
    article.appendChild(head);
    return article;
  }

  function sentenceView(sentence) {
    const article = itemArticle(sentence);
    const references = sentence.references;
    const sources = sentence.source_tokens.map(sourceToken);
    const targets = sentence.target_tokens.map((token, t) => targetToken(sentence, token, t));
    const text = itemText([
      ["source", element("span", "source-text", sentence.source)],
      ["prediction", element("span", "prediction-text", sentence.prediction)],
      references === null ? null : [references.length === 1 ? "reference" : "references", holding(
        "span", "references", references.map((reference) => element("span", "reference", reference)))],
      ["source tokens", holding("div", "tokens source-tokens", sources)],
      ["output tokens", holding("div", "tokens target-tokens", targets)],
    ]);
    const caption = element("div", "caption");
    text.appendChild(caption);
    const details = element("details", "heatmap-details");
    details.open = true;
    details.appendChild(element("summary", "", "heat map (rows: output tokens, columns: source tokens)"));
    const table = heatmap(sentence);
    details.appendChild(table);
    article.append(holding("div", "sentence-body", [text, details]));

    const view = { sentence, sources, targets, caption, heatmapRows: Array.from(table.tBodies[0].rows) };
    bindTokens(sentence, targets, (t) => select(view, t));
    return article;
  }

  // A memory network's question: the memory's sentences (oldest first) as rows, one column per hop shaded by its
  // weight p^k_i (printed in the cell), supporting facts marked "*"; above them the question and the answers.
  function questionView(question) {
    const article = itemArticle(question);
    const text = itemText([
      ["question", element("span", "question-text", question.question)],
      ["answer", element("span", "prediction-text", question.answer)],
      question.expected === null ? null : ["expected", element("span", "reference", question.expected)],
    ]);
    const table = element("table", "heatmap memory");
    const header = table.createTHead().insertRow();
    question.hop_attentions.forEach((_, k) => header.appendChild(element("th", "hop", "hop " + (k + 1))));
    header.appendChild(element("th", "marker"));
    header.appendChild(element("th", "memory-heading", "memory, oldest first (* = supporting fact)"));
    const body = table.createTBody();
    question.memory.forEach((sentence, i) => {
      const row = body.insertRow();
      const supporting = question.supporting_facts.includes(i);
      row.classList.toggle("supporting", supporting);
      question.hop_attentions.forEach((weights, k) => {
        const cell = row.insertCell();
        cell.className = "hop-weight";
        cell.classList.toggle("dark", weights[i] >= DARK);
        cell.style.backgroundColor = shade(weights[i]);
        cell.textContent = weights[i].toFixed(2);
        cell.title = "hop " + (k + 1) + ", sentence " + (i + 1) + ": p = " + weights[i].toFixed(4);
      });
      row.appendChild(element("td", "marker", supporting ? "*" : ""));
      row.appendChild(element("td", "memory-sentence", sentence));
    });
    text.appendChild(table);
    article.appendChild(text);
    return article;
  }

  // An image-to-text example: the image (magnified, pixels kept sharp) under a canvas of its own pixel size, the
  // prediction, reference and output tokens. Selecting token t greys the image and fills each region's block of
  // pixels, rows [r sh, (r + 1) sh) and columns [c sw, (c + 1) sw) of region i = r W' + c, with orange at opacity
  // data.overlay_opacity * α[t][i] / max_i α[t][i]; the canvas crops the blocks that reach beyond the image.
  function imageView(example) {
    const article = itemArticle(example);
    const [rows, columns] = example.stride;
    const scale = Math.max(1, Math.min(8, Math.floor(IMAGE_SIZE / Math.max(example.height, example.width))));
    const frame = element("div", "image-frame");
    frame.style.width = example.width * scale + "px";
    frame.style.height = example.height * scale + "px";
    const picture = element("img", "example-image");
    picture.src = example.image;
    picture.alt = "image #" + example.number;
    const canvas = element("canvas", "attention-overlay");
    canvas.width = example.width;
    canvas.height = example.height;
    frame.append(picture, canvas);
    const targets = example.tokens.map(outputToken);
    const text = itemText([
      ["prediction", element("span", "prediction-text", example.prediction)],
      example.reference === null ? null : ["reference", element("span", "reference", example.reference)],
      ["output tokens", holding("div", "tokens target-tokens", targets)],
    ]);
    const caption = element("div", "caption");
    text.appendChild(caption);
    article.appendChild(holding("div", "sentence-body", [frame, text]));

    const context = canvas.getContext("2d");
    bindTokens(example, targets, (t) => {
      markTokens(example, targets, t);
      frame.classList.toggle("attending", t !== null);
      context.clearRect(0, 0, canvas.width, canvas.height);
      if (t === null) {
        caption.textContent = "Hover over an output token; click it to pin.";
        return;
      }
      const weights = example.weights[t];
      const strongest = weights.indexOf(Math.max(...weights));
      weights.forEach((weight, i) => {
        if (weight <= 0) return;
        context.fillStyle = "rgba(255, 110, 0, " + data.overlay_opacity * weight / weights[strongest] + ")";
        context.fillRect((i % example.grid[1]) * columns, Math.floor(i / example.grid[1]) * rows, columns, rows);
      });
      caption.textContent = "output token " + (t + 1) + " \u201c" + tokenLabel(example.tokens[t]) +
        "\u201d attends most to region (row " + (Math.floor(strongest / example.grid[1]) + 1) + ", column " +
        (strongest % example.grid[1] + 1) + ") of " + example.grid[0] + " \u00d7 " + example.grid[1] +
        " (\u03b1 = " + weights[strongest].toFixed(2) + ")" + (pinnedToken(example) === t ? " \u2014 pinned" : "");
    });
    return article;
  }

  function render() {
    const shown = state.onlyWrong ? wrongItems : kind.items;
    const pages = Math.max(1, Math.ceil(shown.length / data.page_size));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * data.page_size;
    const slice = shown.slice(start, start + data.page_size);
    document.getElementById("sentences").replaceChildren(...slice.map(kind.view));
    document.getElementById("page-indicator").textContent = "page " + (state.page + 1) + " of " + pages;
    document.getElementById("showing").textContent = shown.length === 0 ? "no " + kind.noun :
      kind.noun + " " + (start + 1) + "\u2013" + (start + slice.length) + " of " + shown.length;
    document.getElementById("previous-page").disabled = state.page === 0;
    document.getElementById("next-page").disabled = state.page >= pages - 1;
  }

  function turnPage(step) {
    state.page += step;
    render();
    document.getElementById("sentences").scrollIntoView();
  }

  renderHeader();
  document.getElementById("previous-page").addEventListener("click", () => turnPage(-1));
  document.getElementById("next-page").addEventListener("click", () => turnPage(1));
  document.getElementById("only-wrong").addEventListener("change", (event) => {
    state.onlyWrong = event.target.checked;
    state.page = 0;
    render();
  });
  render();
})();
