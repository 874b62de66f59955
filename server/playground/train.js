// train.js owns the Train tab: a training job started, followed through its events, drawn as a loss curve, and stopped.
"use strict";

// checkTraining asks whether this server trains (cmd/serve -training).
async function checkTraining() {
  try {
    const resp = await fetch("v1/fine_tuning/jobs?limit=1", { headers: headers() });
    if (resp.status === 401) return; // asked again once the key is in
    if (!resp.ok) throw await apiError(resp);
    state.training = true;
  } catch (e) {
    state.training = false;
  }
  $("train-off").hidden = state.training;
  for (const id of ["train-run", "train-steps", "train-sample-every", "train-seed", "train-base", "train-lanternbay", "train-mine", "train-text"]) {
    $(id).disabled = !state.training;
  }
  listTuned();
}

function fillTrainBase() {
  const sel = $("train-base");
  const keep = sel.value || "scratch";
  sel.replaceChildren(new Option("from scratch (a small preset: 2 layers, 4 heads, width 64, context 32)", "scratch"));
  for (const m of state.models) sel.append(new Option(`fine-tune ${m.id} (${m.parameters.toLocaleString("en")} parameters)`, m.id));
  sel.value = [...sel.options].some((o) => o.value === keep) ? keep : "scratch";
  updateTrainBase();
}

function updateTrainBase() {
  const base = $("train-base").value;
  $("train-base-why").textContent = base === "scratch"
    ? "A new model with random weights: it starts by writing noise, and learns the text's characters."
    : "Fine-tuning keeps the model's characters: every character of the text must be one it knows.";
}

// trainingText returns the text to upload, or null for Lantern Bay.
function trainingText() {
  return $("train-mine").checked ? $("train-text").value : null;
}

async function train() {
  const errBox = $("train-error");
  hideError(errBox);
  $("train-use").hidden = true;
  const steps = Number($("train-steps").value);
  const sampleEvery = Number($("train-sample-every").value);
  const base = $("train-base").value;
  $("train-run").disabled = true;
  $("train-status").textContent = "Starting…";
  state.train = { train: [], val: [], steps, job: null, abort: new AbortController() };
  drawCurve();
  $("train-sample").replaceChildren();
  $("train-sample-step").textContent = "";
  try {
    let file = "file-lanternbay";
    const text = trainingText();
    if (text !== null) {
      const resp = await fetch("v1/files", {
        method: "POST", headers: headers(),
        body: JSON.stringify({ purpose: "fine-tune", filename: "playground.txt", content: text }),
      });
      if (!resp.ok) throw await apiError(resp);
      file = (await resp.json()).id;
    }
    const resp = await fetch("v1/fine_tuning/jobs", {
      method: "POST", headers: headers(),
      body: JSON.stringify({
        model: base, training_file: file, seed: Number($("train-seed").value), suffix: "playground",
        hyperparameters: { steps, eval_every: Math.max(1, Math.round(steps / 20)), sample_every: sampleEvery },
      }),
    });
    if (!resp.ok) throw await apiError(resp);
    const job = await resp.json();
    state.train.job = job.id;
    $("train-stop").disabled = false;
    await followJob(job.id);
  } catch (e) {
    if (e.name !== "AbortError") {
      $("train-status").textContent = "";
      showError(errBox, e);
    }
  } finally {
    $("train-run").disabled = !state.training;
    $("train-stop").disabled = true;
  }
}

// followJob streams a job's events into the curve and the sample, and
// reports how the job ended.
async function followJob(id) {
  const t = state.train;
  const resp = await fetch(`v1/fine_tuning/jobs/${id}/events?stream=true`, { headers: headers(), signal: t.abort.signal });
  if (!resp.ok) throw await apiError(resp);
  let pending = false;
  const redraw = () => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => { pending = false; drawCurve(); });
    }
  };
  for await (const data of readEvents(resp)) {
    if (data === "[DONE]") break;
    const ev = JSON.parse(data);
    if (ev.type === "metrics") {
      t.train.push([ev.data.step, ev.data.train_loss]);
      if (ev.data.valid_loss !== undefined) t.val.push([ev.data.step, ev.data.valid_loss]);
      $("train-status").textContent = `Step ${ev.data.step} of ${ev.data.total_steps} · training loss ${ev.data.train_loss.toFixed(3)}` +
        (t.val.length ? ` · validation loss ${t.val[t.val.length - 1][1].toFixed(3)}` : "");
      redraw();
    } else if (ev.data && ev.data.sample !== undefined) {
      $("train-sample").textContent = ev.data.sample;
      $("train-sample-step").textContent = `(at step ${ev.data.step})`;
    } else if (!t.train.length) {
      $("train-status").textContent = ev.message; // created, waiting, started
    }
  }
  drawCurve();
  const r = await fetch(`v1/fine_tuning/jobs/${id}`, { headers: headers() });
  if (!r.ok) throw await apiError(r);
  const job = await r.json();
  t.result = job;
  if (job.status === "succeeded") {
    $("train-status").textContent = `Done: ${job.step} steps. The new model is ${job.fine_tuned_model}, ` +
      (job.checkpoint_file ? `saved as ${job.checkpoint_file} in the server's training directory.` : "kept in the server's memory only (serve -train-dir saves models as files).");
    await loadModels();
    $("train-use").hidden = false;
    $("train-use").dataset.model = job.fine_tuned_model;
    await listTuned();
  } else if (job.status === "cancelled") {
    $("train-status").textContent = `Stopped after step ${job.step}: nothing was kept.`;
  } else {
    $("train-status").textContent = "";
    showError($("train-error"), Object.assign(new Error(job.error ? job.error.message : job.status), { status: 200, code: job.error && job.error.code }));
  }
}

async function stopTraining() {
  const t = state.train;
  if (!t || !t.job) return;
  $("train-stop").disabled = true;
  $("train-status").textContent = "Stopping at the end of this step…";
  const resp = await fetch(`v1/fine_tuning/jobs/${t.job}/cancel`, { method: "POST", headers: headers(), body: "{}" });
  if (!resp.ok) showError($("train-error"), await apiError(resp));
}

// drawCurve draws the training loss of every step and the validation loss
// of every evaluation, with axes, as SVG at its box's width in pixels
// (one unit of the drawing a pixel), so that its labels are as large on
// a phone as on a laptop.
function drawCurve() {
  const svg = $("train-curve");
  const NS = svg.namespaceURI; // SVG's, from the page's own <svg>
  const box = $("train-curve-box").clientWidth;
  if (!box) return; // not on screen: drawn when the Train tab opens
  const W = Math.min(box, 760), H = W < 500 ? 220 : 260, L = 52, R = 16, T = 14, B = 38;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  const t = state.train || { train: [], val: [], steps: Number($("train-steps").value) };
  svg.replaceChildren();
  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  const all = [...t.train, ...t.val].map((p) => p[1]);
  const yMax = all.length ? Math.max(...all) * 1.05 : 3.5;
  const xMax = Math.max(1, t.steps);
  const x = (s) => L + ((W - L - R) * s) / xMax;
  const y = (v) => T + (H - T - B) * (1 - v / yMax);
  const xTicks = W < 420 ? 2 : 4; // room for each step number at 11 px
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4;
    mk("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" });
    mk("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", class: "tick" }, v.toFixed(v < 10 ? 1 : 0));
  }
  for (let k = 0; k <= xTicks; k++) {
    const s = Math.round((xMax * k) / xTicks);
    mk("text", { x: x(s), y: H - B + 16, "text-anchor": k === xTicks ? "end" : k === 0 ? "start" : "middle", class: "tick" }, String(s));
  }
  mk("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "axis" }, "step");
  mk("text", { x: 12, y: (T + H - B) / 2, transform: `rotate(-90 12 ${(T + H - B) / 2})`, "text-anchor": "middle", class: "axis" }, "loss (nats per character)");
  const pts = (ps) => ps.map(([s, v]) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  mk("polyline", { points: pts(t.train), class: "train", "data-n": t.train.length });
  mk("polyline", { points: pts(t.val), class: "val", "data-n": t.val.length });
  for (const [s, v] of t.val) mk("circle", { cx: x(s), cy: y(v), r: 3, class: "val" });
  mk("line", { x1: W - 170, x2: W - 150, y1: T + 6, y2: T + 6, class: "train" });
  mk("text", { x: W - 145, y: T + 10, class: "key" }, "training");
  mk("circle", { cx: W - 80, cy: T + 6, r: 3, class: "val" });
  mk("text", { x: W - 72, y: T + 10, class: "key" }, "validation");
}

// ---- the models trained on this server ----

// listTuned lists the fine-tuned models the server serves, each with
// whether it is saved (a checkpoint file in the server's -train-dir) or
// lives only in the server's memory, and a button that removes it.
async function listTuned() {
  if (!state.training) return;
  const box = $("tuned"), list = $("tuned-list");
  try {
    const resp = await fetch("v1/fine_tuning/jobs?limit=100", { headers: headers() });
    if (!resp.ok) throw await apiError(resp);
    const jobs = (await resp.json()).data;
    const served = new Set(state.models.map((m) => m.id));
    const tuned = jobs.filter((j) => j.status === "succeeded" && j.fine_tuned_model && served.has(j.fine_tuned_model));
    list.replaceChildren();
    for (const j of tuned) {
      const name = j.fine_tuned_model;
      const li = el("li", "tuned-model");
      li.dataset.model = name;
      const saved = j.checkpoint_file
        ? el("span", "saved", `saved as ${j.checkpoint_file} in the server's training directory`)
        : el("span", "unsaved", "in the server's memory only: gone when it stops");
      const remove = el("button", "quiet remove", "Remove");
      remove.title = j.checkpoint_file ? "Stop serving it (its checkpoint file stays)" : "Stop serving it and forget it";
      remove.addEventListener("click", () => removeTuned(name));
      li.append(el("code", null, name), document.createTextNode(" · "), saved, remove);
      list.append(li);
    }
    box.hidden = tuned.length === 0;
    $("tuned-where").textContent = tuned.some((j) => !j.checkpoint_file)
      ? "A model kept in memory is gone when the server stops; started with -train-dir DIR, the server also saves each one as a checkpoint file there."
      : "Each is saved as a checkpoint file, which generate -model and serve -model load.";
  } catch (e) {
    box.hidden = true;
  }
}

// removeTuned stops serving a fine-tuned model.
async function removeTuned(name) {
  hideError($("train-error"));
  try {
    const resp = await fetch("v1/models/" + encodeURIComponent(name), { method: "DELETE", headers: headers() });
    if (!resp.ok) throw await apiError(resp);
    if ($("train-use").dataset.model === name) $("train-use").hidden = true;
    await loadModels();
    await listTuned();
  } catch (e) {
    showError($("train-error"), e);
  }
}

function generateWithIt() {
  const name = $("train-use").dataset.model;
  if (!state.models.some((m) => m.id === name)) return;
  selectModel(name);
  showTab("generate");
  $("prompt").focus();
}
