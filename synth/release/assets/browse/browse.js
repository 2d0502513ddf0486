// synth browse: one persona's timeline, traces and questions, linked both ways. Plain DOM, no dependencies.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("synth-data").textContent);
  const LABELS = {
    en: {
      all_personas: "← all personas", timeline: "Timeline", type: "Type", dimension: "Dimension", medium: "Medium",
      arc: "Arc", clear: "Clear", questions: "Questions", rejected: "Rejected items", traces: "Traces", any: "(any)",
      majors: "major events", phases: "phases", events: "events", traces_lane: "traces", evidence: "Evidence",
      answer: "Answer", asked: "asked", used_by: "Questions that use this trace", none: "none",
      filter: "filter", reason: "reason", before: "snapshot before", after: "snapshot after", everyday: "everyday",
      background: "background (does not answer)", shown: "shown", of: "of", state: "state",
      energy: "energy", stress: "stress", emotion: "emotion", focus: "focus", arc_status: "arc status",
      traces_of_question: "traces of this question", people: "People",
    },
    zh: {
      all_personas: "← 全部人物", timeline: "时间线", type: "题型", dimension: "维度", medium: "媒介", arc: "人生弧线",
      clear: "清除", questions: "问题", rejected: "被过滤的题目", traces: "数字痕迹", any: "（全部）",
      majors: "重大事件", phases: "阶段", events: "事件", traces_lane: "痕迹", evidence: "证据", answer: "答案",
      asked: "提问时间", used_by: "使用这条痕迹的问题", none: "无", filter: "过滤器", reason: "原因",
      before: "阶段前快照", after: "阶段后快照", everyday: "日常", background: "背景（不能回答问题）", shown: "显示",
      of: "/", state: "状态", energy: "精力", stress: "压力", emotion: "主导情绪", focus: "关注点",
      arc_status: "弧线状态", traces_of_question: "该问题的痕迹", people: "人物",
    },
  };
  // Display names of the data's ids for a Chinese reader (the ids themselves stay as they are in the data).
  const NAMES_ZH = {
    factual: "事实", comparison: "比较", trajectory: "轨迹", pattern: "模式", causal: "因果", counterfactual: "反事实",
    inference: "推断", unanswerable: "无法回答", experience: "经历", emotion: "情绪", opinion: "观点",
    diary: "日记", social_post: "社交动态", message_thread: "聊天记录", email: "邮件", note: "笔记", todo_list: "待办清单",
    calendar_entry: "日程", search_history: "搜索记录", voice_memo_transcript: "语音备忘录", photo_caption: "照片说明",
    fact: "事实", group_chat: "群聊", lifelog: "生活日志",
  };
  const lang = DATA.persona.language === "zh" ? "zh" : "en";
  const L = (key) => LABELS[lang][key] || LABELS.en[key] || key;
  const N = (id) => (lang === "zh" && NAMES_ZH[id] ? NAMES_ZH[id] : id);
  const MEDIA_COLOURS = ["#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#6d4c41", "#3949ab",
    "#c0ca33", "#d81b60", "#546e7a", "#f4511e"];
  const media = [...new Set(DATA.traces.map((t) => t.medium))].sort();
  const colourOf = (m) => MEDIA_COLOURS[media.indexOf(m) % MEDIA_COLOURS.length];
  const tracesById = new Map(DATA.traces.map((t) => [t.id, t]));
  const items = [...DATA.questions, ...DATA.rejected];
  const itemsById = new Map(items.map((q) => [q.id, q]));
  const arcsById = new Map(DATA.arcs.map((a) => [a.id, a]));
  const eventsById = new Map(DATA.events.map((e) => [e.id, e]));
  const usedBy = new Map();
  for (const q of items) for (const t of q.traces) { if (!usedBy.has(t)) usedBy.set(t, []); usedBy.get(t).push(q); }
  const state = { question: null, trace: null };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  const day = (iso) => (iso ? new Date(iso.length <= 10 ? iso + "T00:00:00" : iso) : null);
  const short = (iso) => (iso || "").replace("T", " ").slice(0, 16);
  const arcName = (id) => { const a = arcsById.get(id); return a ? `${a.title} (${a.dimension})` : id; };

  // ---------------------------------------------------------------------------------------------- timeline
  function drawTimeline() {
    const dates = [DATA.persona.start, DATA.persona.end, ...DATA.traces.map((t) => t.time),
      ...DATA.majors.flatMap((m) => [m.start, m.end]), ...items.map((q) => q.time)].map(day).filter((d) => d && !isNaN(d));
    if (!dates.length) return;
    const t0 = Math.min(...dates), t1 = Math.max(...dates) + 86400000;
    const left = 170, width = Math.max(900, Math.min(4000, Math.round((t1 - t0) / 86400000) * 12)), lane = 26;
    const x = (d) => left + ((day(d) - t0) / (t1 - t0)) * width;
    const rows = ["majors", "phases", ...DATA.arcs.map((a) => a.id), "events", "traces_lane"];
    const root = svg("svg", { width: left + width + 20, height: rows.length * lane + 30, role: "img" });
    rows.forEach((row, i) => {
      const name = arcsById.has(row) ? arcsById.get(row).title : L(row);
      const label = svg("text", { x: 4, y: i * lane + 17, class: "lane-label" }, name.length > 22 ? name.slice(0, 21) + "…" : name);
      label.append(svg("title", {}, arcsById.has(row) ? arcName(row) : name));
      root.append(label, svg("line", { x1: left, x2: left + width, y1: i * lane + lane, y2: i * lane + lane, stroke: "#eee" }));
    });
    const bar = (cls, row, start, end, text, title, onclick) => {
      const g = svg("g", { class: cls });
      const x0 = x(start), x1 = Math.max(x0 + 3, x(end) + (end && end.length <= 10 ? width * 86400000 / (t1 - t0) : 0));
      g.append(svg("rect", { x: x0, y: row * lane + 4, width: x1 - x0, height: lane - 8, rx: 3 }));
      g.append(svg("text", { x: x0 + 3, y: row * lane + 17 }, text.length * 6 < x1 - x0 ? text : ""));
      g.append(svg("title", {}, title));
      g.addEventListener("click", onclick);
      root.append(g);
    };
    DATA.majors.forEach((m) => bar("major", 0, m.start, m.end, m.title, `${m.title}\n${m.start} – ${m.end}\n${m.description}`,
      () => showText(m.title, `${m.start} – ${m.end}`, m.description)));
    DATA.phases.forEach((p) => bar("phase" + (p.everyday ? " everyday" : ""), 1, p.start, p.end, p.title,
      `${p.title}\n${p.start} – ${p.end}`, () => showPhase(p)));
    DATA.arcs.forEach((a, k) => {
      const steps = a.steps;
      steps.forEach(([start, index], j) => {
        const end = j + 1 < steps.length ? steps[j + 1][0] : DATA.persona.end || start;
        const s = a.states[index] || { label: `${L("state")} ${index}`, description: "" };
        const shade = `hsl(${(k * 67) % 360}, 55%, ${82 - 12 * index}%)`;
        const g = svg("g", { class: "state", "data-arc": a.id });
        const x0 = x(start), x1 = Math.max(x0 + 3, x(end));
        g.append(svg("rect", { x: x0, y: (2 + k) * lane + 4, width: x1 - x0, height: lane - 8, fill: shade }));
        g.append(svg("text", { x: x0 + 3, y: (2 + k) * lane + 17 }, `${index}: ${s.label}`.length * 6 < x1 - x0 ? `${index}: ${s.label}` : `${index}`));
        g.append(svg("title", {}, `${arcName(a.id)}\n${index}: ${s.label}\n${s.description}`));
        g.addEventListener("click", () => showText(`${a.title} — ${index}: ${s.label}`, `${L("state")} ${index} · ${start}`, s.description));
        root.append(g);
      });
    });
    const eventsRow = rows.length - 2, tracesRow = rows.length - 1;
    DATA.events.forEach((e) => {
      const dot = svg("circle", { cx: x(e.time), cy: eventsRow * lane + lane / 2, r: 4, class: "event-dot" + (e.everyday ? " everyday" : "") });
      dot.append(svg("title", {}, `${short(e.time)} ${e.title}${e.everyday ? " · " + L("everyday") : ""}`));
      dot.addEventListener("click", () => showEvent(e));
      root.append(dot);
    });
    DATA.traces.forEach((t, i) => {
      const dot = svg("circle", { cx: x(t.time), cy: tracesRow * lane + 7 + (i % 3) * 6, r: 4.5, fill: colourOf(t.medium),
        class: "trace-dot", "data-trace": t.id });
      dot.append(svg("title", {}, `${short(t.time)} · ${t.medium}`));
      dot.addEventListener("click", () => selectTrace(t.id));
      root.append(dot);
    });
    root.append(svg("line", { id: "question-marker", class: "question-marker hidden", x1: 0, x2: 0, y1: 0, y2: rows.length * lane }));
    root.dataset.scale = JSON.stringify({ t0, t1, left, width });
    document.getElementById("timeline").append(root);
    document.getElementById("legend").append(...media.map((m) => el("span", { title: m }, el("i", { style: `background:${colourOf(m)}` }), N(m))));
    state.x = x;
  }

  // ---------------------------------------------------------------------------------------------- lists
  function questionCard(q) {
    const choices = el("ol", { class: "choices", type: "A" }, ...q.choices.map((c) =>
      el("li", { class: c.id === q.correct ? "correct" : "", value: "ABCDE".indexOf(c.id) + 1 }, c.text)));
    const card = el("article", { class: `question ${q.status}`, "data-id": q.id, lang: q.language === "zh" ? "zh-CN" : "en",
      onclick: () => selectQuestion(q.id) },
      el("div", { class: "meta" }, el("span", { class: "tag", title: q.type, text: N(q.type) }), el("span", { class: "tag", title: q.dimension, text: N(q.dimension) }),
        `${L("asked")} ${short(q.time)} · ${arcName(q.arc)}`),
      el("div", { class: "q", text: q.question }),
      choices,
      el("div", { class: "meta", text: `${L("answer")}: ${q.answer}` }),
      q.status === "rejected" ? el("div", { class: "reason", text: `${L("filter")}: ${q.filter} — ${L("reason")}: ${q.reason}` }) : null);
    return card;
  }
  function traceCard(t) {
    const event = eventsById.get(t.event);
    return el("article", { class: "trace", "data-id": t.id, id: `trace-${t.id}`, lang: t.language === "zh" ? "zh-CN" : "en",
      onclick: () => selectTrace(t.id) },
      el("div", { class: "meta" }, el("span", { class: "tag", title: t.medium, style: `border-left:4px solid ${colourOf(t.medium)}`, text: N(t.medium) }),
        event && event.everyday ? el("span", { class: "tag everyday", text: L("everyday") }) : null,
        `${short(t.time)} · ${t.id.slice(0, 8)}` + (usedBy.has(t.id) ? ` · ${usedBy.get(t.id).length} ${L("questions")}` : "")),
      el("div", { class: "content", text: t.content }));
  }
  function fillSelect(id, values, label) {
    const select = document.getElementById(id);
    select.append(el("option", { value: "", text: L("any") }), ...values.map(([v, text]) => el("option", { value: v, text: text || v })));
    select.addEventListener("change", applyFilters);
    select.setAttribute("aria-label", L(label));
  }
  function applyFilters() {
    const f = (id) => document.getElementById(id).value;
    const [type, dim, medium, arc] = ["f-type", "f-dimension", "f-medium", "f-arc"].map(f);
    let shownQ = 0, shownT = 0;
    document.querySelectorAll(".question").forEach((node) => {
      const q = itemsById.get(node.dataset.id);
      const ok = (!type || q.type === type) && (!dim || q.dimension === dim) && (!arc || q.arc === arc);
      node.classList.toggle("hidden", !ok); if (ok && q.status === "final") shownQ++;
    });
    document.querySelectorAll(".trace").forEach((node) => {
      const t = tracesById.get(node.dataset.id);
      const ok = (!medium || t.medium === medium) && (!arc || t.arcs.includes(arc));
      node.classList.toggle("hidden", !ok); if (ok) shownT++;
      const dot = document.querySelector(`circle[data-trace="${t.id}"]`);
      if (dot) dot.classList.toggle("dim", !ok);
    });
    document.getElementById("questions-count").textContent = `${shownQ} ${L("of")} ${DATA.questions.length}`;
    document.getElementById("traces-count").textContent = `${shownT} ${L("of")} ${DATA.traces.length}`;
  }

  // ---------------------------------------------------------------------------------------------- selection
  function clearSelection() {
    document.querySelectorAll(".hl, .selected").forEach((n) => n.classList.remove("hl", "selected"));
    const marker = document.getElementById("question-marker");
    if (marker) marker.classList.add("hidden");
  }
  function highlightTraces(ids) {
    for (const id of ids) {
      document.querySelectorAll(`[data-trace="${id}"], .trace[data-id="${id}"]`).forEach((n) => n.classList.add("hl"));
    }
  }
  function traceLink(id) {
    const t = tracesById.get(id);
    return el("a", { class: "link", "data-trace-link": id, onclick: (ev) => { ev.stopPropagation(); selectTrace(id); } },
      t ? `${short(t.time)} ${t.medium}` : id.slice(0, 8));
  }
  function selectQuestion(id, scroll = true) {
    const q = itemsById.get(id);
    if (!q) return;
    clearSelection();
    state.question = id;
    const card = document.querySelector(`.question[data-id="${id}"]`);
    card.classList.add("selected");
    highlightTraces(q.traces);
    const marker = document.getElementById("question-marker");
    if (marker && state.x && q.time) {
      const xq = state.x(q.time);
      marker.setAttribute("x1", xq); marker.setAttribute("x2", xq); marker.classList.remove("hidden");
    }
    const detail = document.getElementById("detail");
    detail.replaceChildren(
      el("h3", { text: q.question }),
      el("p", { class: "meta", text: `${q.type} · ${q.dimension} · ${L("asked")} ${short(q.time)} · ${L("answer")}: ${q.answer}` }),
      el("h4", { text: L("evidence") }),
      ...(q.evidence.length ? q.evidence.map((e) => el("div", { class: "evidence" + (e.background ? " background" : ""), "data-evidence": e.evidence_id },
        `• ${e.statement} `, e.background ? el("em", { text: `(${L("background")}) ` }) : null,
        ...e.traces.flatMap((t) => [traceLink(t), " "]))) : [el("p", { text: L("none") })]),
      el("p", { class: "meta" }, `${L("traces_of_question")}: `, ...q.traces.flatMap((t) => [traceLink(t), " "])));
    if (scroll) {
      const first = document.querySelector(`.trace[data-id="${q.traces[0]}"]`);
      if (first) first.scrollIntoView({ block: "nearest" });
    }
    history.replaceState(null, "", `#q=${id}`);
  }
  function selectTrace(id, scroll = true) {
    const t = tracesById.get(id);
    if (!t) return;
    clearSelection();
    state.trace = id;
    highlightTraces([id]);
    const card = document.querySelector(`.trace[data-id="${id}"]`);
    if (card) { card.classList.add("selected"); if (scroll) card.scrollIntoView({ block: "nearest" }); }
    const users = usedBy.get(id) || [];
    document.getElementById("detail").replaceChildren(
      el("h3", { text: `${t.medium} · ${short(t.time)}` }),
      el("div", { class: "content", lang: t.language === "zh" ? "zh-CN" : "en", text: t.content }),
      el("h4", { text: L("evidence") }),
      ...t.evidence.map((e) => el("div", { class: "evidence", text: `• ${(DATA.evidence[e] || {}).statement || e} (${(DATA.evidence[e] || {}).kind || ""})` })),
      el("h4", { text: L("used_by") }),
      ...(users.length ? users.map((q) => el("div", { class: "used-by" }, el("a", { class: "link", "data-question-link": q.id,
        onclick: () => selectQuestion(q.id) }, `[${q.type}] ${q.question}`))) : [el("p", { text: L("none") })]));
    history.replaceState(null, "", `#t=${id}`);
  }
  function snapshotLines(s) {
    if (!s || !Object.keys(s).length) return el("p", { text: L("none") });
    const arcs = Object.entries(s.arc_status || {}).map(([a, v]) => el("li", { text: `${arcName(a)}: ${v}` }));
    return el("ul", {}, el("li", { text: `${L("energy")} ${s.energy} · ${L("stress")} ${s.stress} · ${L("emotion")}: ${s.dominant_emotion}` }),
      el("li", { text: `${L("focus")}: ${s.focus}` }), el("li", {}, `${L("arc_status")}:`, el("ul", {}, ...arcs)));
  }
  function showPhase(p) {
    clearSelection();
    document.getElementById("detail").replaceChildren(el("h3", { text: p.title }),
      el("p", { class: "meta", text: `${p.start} – ${p.end}${p.everyday ? " · " + L("everyday") : ""}` }),
      el("p", { text: p.description }), el("h4", { text: L("before") }), snapshotLines(p.before),
      el("h4", { text: L("after") }), snapshotLines(p.after));
  }
  function showEvent(e) {
    clearSelection();
    const traces = DATA.traces.filter((t) => t.event === e.id).map((t) => t.id);
    highlightTraces(traces);
    document.getElementById("detail").replaceChildren(el("h3", { text: e.title }),
      el("p", { class: "meta", text: `${short(e.time)} · ${e.location}${e.everyday ? " · " + L("everyday") : ""}` }),
      el("p", { text: e.description }), el("p", { class: "meta" }, `${L("traces")}: `, ...traces.flatMap((t) => [traceLink(t), " "])));
  }
  function showText(title, meta, body) {
    clearSelection();
    document.getElementById("detail").replaceChildren(el("h3", { text: title }), el("p", { class: "meta", text: meta }), el("p", { text: body }));
  }

  // ---------------------------------------------------------------------------------------------- start
  function start() {
    document.querySelectorAll("[data-label]").forEach((n) => { n.textContent = L(n.dataset.label); });
    const p = DATA.persona;
    document.getElementById("persona-name").textContent = `${p.name || p.id} · ${p.id}`;
    document.getElementById("persona-summary").textContent =
      [p.age ? `${p.age}` : "", p.occupation, `${p.start} – ${p.end}`, p.backstory].filter(Boolean).join(" · ");
    if (DATA.people.length) {
      document.getElementById("persona-people").textContent =
        `${L("people")}: ` + DATA.people.map((x) => (x.relation ? `${x.name} (${x.relation})` : x.name)).join(" · ");
    }
    drawTimeline();
    document.getElementById("questions").append(...DATA.questions.map(questionCard));
    document.getElementById("rejected").append(...DATA.rejected.map(questionCard));
    document.getElementById("rejected-count").textContent = `${DATA.rejected.length}`;
    document.getElementById("traces").append(...DATA.traces.map(traceCard));
    const uniq = (xs) => [...new Set(xs)].sort().map((v) => [v, N(v)]);
    fillSelect("f-type", uniq(items.map((q) => q.type)), "type");
    fillSelect("f-dimension", uniq(items.map((q) => q.dimension)), "dimension");
    fillSelect("f-medium", media.map((m) => [m, N(m)]), "medium");
    fillSelect("f-arc", DATA.arcs.map((a) => [a.id, arcName(a.id)]), "arc");
    document.getElementById("f-clear").addEventListener("click", () => {
      document.querySelectorAll("#filters select").forEach((s) => { s.value = ""; });
      applyFilters();
    });
    applyFilters();
    const hash = new URLSearchParams(location.hash.slice(1));
    if (hash.get("q")) selectQuestion(hash.get("q"));
    else if (hash.get("t")) selectTrace(hash.get("t"));
  }
  start();
})();
