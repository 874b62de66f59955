// format.js owns the Generate tab's format field: none, a regular expression, a list of choices or a grammar, with examples the selected model can write, sent as guided_regex, guided_choice or guided_grammar.
"use strict";

// Examples of each kind, best first: the first whose characters (needs)
// the model has is offered; a BPE model writes any character. When none
// fits, one is made of the model's own characters.
const FORMAT_EXAMPLES = {
  regex: [
    { src: "(keeper|lantern|tide) (rises|burns|walks) at (dusk|dawn)\\.", needs: "keeperlanterntiderisesburnswalksatduskdawn .",
      say: "the rest of a sentence, of three choices; the sample ends once it is complete" },
    { src: "[A-Z][a-z]+( [a-z]+){2,5}\\.", needs: "AZaz .", say: "a capitalised sentence of three to six words" },
  ],
  choices: [
    { src: "dusk\ndawn\nnight", needs: "duskawnight", say: "one of three answers, one a line" },
    { src: "yes\nno", needs: "yesno", say: "yes or no, one a line" },
  ],
  grammar: [
    { src: 'root ::= noun " " verb " at " time "."\nnoun ::= "keeper" | "lantern" | "tide"\nverb ::= "rises" | "burns" | "walks"\ntime ::= "dusk" | "dawn"',
      needs: "keeperlanterntiderisesburnswalksatduskdawn .", say: "a GBNF grammar (llama.cpp's): rules, alternatives, literals" },
    { src: 'root ::= line ("\\n" line)?\nline ::= [A-Z] [a-z]+ (" " [a-z]+)* "."', needs: "AZaz .\n", say: "one or two capitalised lines" },
  ],
};

// formatChars returns up to 8 letters or digits of the model's vocabulary,
// for an example made of them.
function formatChars() {
  const ok = state.model.vocab.filter((c) => /^[\p{L}\p{N}]$/u.test(c));
  return (ok.length ? ok : state.model.vocab.filter((c) => /^[^\s\\\]\[^"-]$/.test(c))).slice(0, 8);
}

// formatExample returns an example of kind the selected model can write.
function formatExample(kind) {
  const vocab = new Set(state.model.vocab);
  const fits = (needs) => isBPE() || Array.from(needs).every((c) => vocab.has(c));
  const ex = FORMAT_EXAMPLES[kind].find((e) => fits(e.needs));
  if (ex) return ex;
  const cs = formatChars();
  const cls = "[" + cs.map((c) => c.replace(/[\\\]\[^-]/g, "\\$&")).join("") + "]";
  const sp = vocab.has(" ");
  switch (kind) {
    case "regex":
      return { src: sp ? `${cls}{2,8}( ${cls}{2,8}){1,3}` : `${cls}{4,20}`, say: "made of this model's own characters" };
    case "choices":
      return { src: [cs.slice(0, 3), cs.slice(3, 5), cs.slice(5, 8)].filter((w) => w.length).map((w) => w.join("")).join("\n"), say: "words of this model's own characters, one a line" };
  }
  return { src: `root ::= word${sp ? ' (" " word){0,3}' : ""}\nword ::= ${cls}+`, say: "a GBNF grammar of this model's own characters" };
}

// showFormat shows the source box for the kind chosen, an example of it
// in the box when the box is empty or still holds an example.
function showFormat(fill) {
  const kind = $("format-kind").value;
  const on = kind !== "none";
  $("format-box").hidden = !on;
  $("format-example").hidden = !on;
  if (!on) return;
  const ex = formatExample(kind);
  const src = $("format-src");
  if (fill || src.value === "" || src.dataset.example === "1") {
    src.value = ex.src;
    src.dataset.example = "1";
  }
  src.rows = kind === "grammar" ? 5 : 3;
  $("format-hint").textContent = (kind === "choices" ? "The text is one of these, one a line. " : kind === "grammar" ? "llama.cpp's GBNF: root is the text. " : "Go's RE2 syntax, matching the whole text. ") +
    `Example: ${ex.say}. The format is the sampler's first stage (grammar): the inspector shows what it cut.`;
}

// formatChanged refreshes an example for a newly selected model.
function formatChanged() {
  if ($("format-kind").value !== "none") showFormat(false);
}

// formatFields returns the request fields of the format chosen, or none.
function formatFields() {
  const kind = $("format-kind").value;
  const src = $("format-src").value;
  switch (kind) {
    case "regex": return { guided_regex: src };
    case "choices": return { guided_choice: src.split("\n").filter((c) => c !== "") };
    case "grammar": return { guided_grammar: src };
  }
  return {};
}

function initFormat() {
  $("format-kind").addEventListener("change", () => showFormat(false));
  $("format-example").addEventListener("click", () => showFormat(true));
  $("format-src").addEventListener("input", () => { $("format-src").dataset.example = "0"; });
}
