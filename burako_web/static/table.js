// The web table's page: lobby, live table, replays. Plain JavaScript, no build step.
// The server decides everything: this page only draws what it is sent and offers
// the legal moves the server listed (state.legal); every click becomes one
// {type: "move", action, step} message that the engine checks again.
"use strict";

const COLOURS = ["black", "red", "blue", "yellow"];
const SUITS = ["♠", "♥", "♦", "♣"];
const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
const JOKER = 52;

const $ = (id) => document.getElementById(id);
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// a tile kind (colour * 13 + number - 1, 52 = joker) as a tile or a card
function tile(kind, cards, small) {
  const t = el("div", "tile" + (small ? " small" : "") + (cards ? " card" : ""));
  t.dataset.kind = kind;
  if (kind === JOKER) { t.classList.add("joker"); t.textContent = "★"; t.title = "joker"; return t; }
  const colour = Math.floor(kind / 13), number = (kind % 13) + 1;
  t.classList.add("c" + colour);
  t.textContent = cards ? RANKS[number - 1] + SUITS[colour] : String(number);
  t.title = cards ? RANKS[number - 1] + SUITS[colour] : COLOURS[colour] + " " + number;
  return t;
}
function backs(count, small) {
  const box = el("span");
  for (let i = 0; i < count; i++) box.appendChild(el("div", "tile back" + (small ? " small" : "")));
  return box;
}
function sameKinds(a, b) {
  if (a.length !== b.length) return false;
  const x = [...a].sort((p, q) => p - q), y = [...b].sort((p, q) => p - q);
  return x.every((v, i) => v === y[i]);
}
function sideName(view, side, seat) {
  const seats = [];
  for (let p = 0; p < view.num_players; p++) if (view.side_of[p] === side) seats.push(p);
  const own = seat !== null && view.side_of[seat] === side;
  return (own ? "your side" : "side " + side) + " (seat" + (seats.length > 1 ? "s " : " ") + seats.join(" + ") + ")";
}

// ------------------------------------------------------------------ shared drawing
function drawMelds(box, view, seat, targets, onPick) {
  box.replaceChildren();
  const order = [];
  const own = seat === null ? 0 : view.side_of[seat];
  for (let i = 0; i < view.num_sides; i++) order.push((own + i) % view.num_sides);
  for (const side of order) {
    const div = el("div", "side");
    div.dataset.side = side;
    const h = el("h3", null, sideName(view, side, seat) + " · match " + view.match_scores[side] +
      (view.muerto_taken[side] ? " · muerto taken" : " · muerto waiting"));
    div.appendChild(h);
    view.melds[side].forEach((meld, slot) => {
      const m = el("div", "meld" + (meld.canasta ? " canasta-" + meld.canasta : ""));
      m.dataset.side = side; m.dataset.slot = slot; m.title = meld.text;
      meld.tiles.forEach((k, i) => {
        const t = tile(k, view.cards, true);
        if (i === meld.wild) { t.classList.add("wild"); t.title += " (wild)"; }
        m.appendChild(t);
      });
      if (meld.canasta) m.appendChild(el("span", "badge", meld.canasta === "clean" ? "CANASTA" : "canasta (dirty)"));
      if (targets && side === own && targets.has(slot)) {
        m.classList.add("target");
        m.addEventListener("click", () => onPick(targets.get(slot)));
      }
      div.appendChild(m);
    });
    if (!view.melds[side].length) div.appendChild(el("span", "label", "no melds yet"));
    box.appendChild(div);
  }
}
function drawPile(box, view) {
  box.replaceChildren();
  for (const k of view.pile) box.appendChild(tile(k, view.cards, true));
  if (!view.pile.length) box.appendChild(el("span", "label", "empty"));
}
function muertoText(view) {
  const parts = [];
  for (let s = 0; s < view.num_sides; s++)
    parts.push("muerto " + s + ": " + (view.muerto_taken[s] ? "taken" : view.muerto_sizes[s] + " tiles"));
  return parts.join(" · ");
}

// ------------------------------------------------------------------ lobby
async function showLobby() {
  $("lobby").hidden = false;
  const opts = await (await fetch("/api/options")).json();
  const game = $("f-game"), preset = $("f-preset"), players = $("f-players");
  for (const g of opts.games) game.appendChild(new Option(g, g));
  for (const name of Object.keys(opts.presets)) preset.appendChild(new Option(name, name));
  const seatsBox = $("f-seats");
  function fillPlayers() {
    players.replaceChildren();
    for (const n of opts.presets[preset.value].players) players.appendChild(new Option(n + " players", n));
    fillSeats();
  }
  function fillSeats() {
    seatsBox.replaceChildren();
    const n = Number(players.value);
    for (let s = 0; s < n; s++) {
      const sel = el("select"); sel.id = "f-seat-" + s;
      for (const k of opts.seat_kinds) sel.appendChild(new Option(k === "person" ? "a person" : k + " (bot)", k));
      sel.value = s === 0 ? "person" : opts.presets[preset.value].default_bot[String(n)];
      const lab = el("label", null, "Seat " + s + (n === 4 ? (s % 2 ? " (side 1)" : " (side 0)") : "") + " ");
      lab.appendChild(sel);
      seatsBox.appendChild(lab);
    }
  }
  if (opts.presets.burako) preset.value = "burako";
  preset.addEventListener("change", fillPlayers);
  players.addEventListener("change", fillSeats);
  fillPlayers();
  $("room-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const n = Number(players.value);
    const seats = [];
    for (let s = 0; s < n; s++) seats.push($("f-seat-" + s).value);
    const body = { game: game.value, preset: preset.value, players: n, seats };
    if ($("f-yaml").value.trim()) body.rules_yaml = $("f-yaml").value;
    const res = await fetch("/api/rooms", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const data = await res.json();
    if (!res.ok) { $("f-error").textContent = data.error; return; }
    location.href = data.url;
  });
}

// ------------------------------------------------------------------ the live table
const live = { ws: null, seat: null, msg: null, selected: [], room: null, sheetOpen: false, sheetClosedFor: null };
window.burako = live; // read by the tests and handy in the console

function connect(room) {
  live.room = room;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(scheme + "://" + location.host + "/ws/" + encodeURIComponent(room));
  live.ws = ws;
  ws.onopen = () => ws.send(JSON.stringify({ type: "hello", token: localStorage.getItem("burako-token-" + room) }));
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === "welcome") {
      live.seat = msg.seat;
      localStorage.setItem("burako-token-" + room, msg.token);
    } else if (msg.type === "error") {
      $("message").textContent = msg.message;
    } else if (msg.type === "state") {
      if (live.msg && live.msg.view && msg.view && (msg.step !== live.msg.step || msg.hand_number !== live.msg.hand_number))
        $("message").textContent = "";
      if (live.msg && msg.hand_number !== live.msg.hand_number) live.sheetOpen = false;
      live.msg = msg;
      render();
    }
  };
  ws.onclose = () => {
    $("status").textContent = "disconnected: reconnecting…";
    setTimeout(() => connect(room), 1500);
  };
}
function send(payload) { if (live.ws && live.ws.readyState === 1) live.ws.send(JSON.stringify(payload)); }
function play(move) { live.selected = []; send({ type: "move", action: move.action, step: live.msg.step }); }

function render() {
  const msg = live.msg, view = msg.view, seat = msg.seat;
  $("room-info").textContent = "room " + msg.room + " · " + msg.game + " (" + (msg.rules.name || "") + ") · you are seat " + seat;
  $("room-info").dataset.seat = seat;
  const statusText = { waiting: "waiting for players to join: share the link", playing: "", hand_over: "hand over",
    match_over: "match over", closed: "room closed" }[msg.status];
  $("status").textContent = msg.error ? msg.error : statusText;
  $("scores").textContent = "match " + msg.match_scores.join(" : ") + " (target " + msg.target + ")";
  const chips = $("seats-bar"); chips.replaceChildren();
  msg.seats.forEach((s, p) => {
    const c = el("span", "seat-chip" + (view && view.current === p && msg.status === "playing" ? " turn" : ""));
    const d = el("span", "dot" + (s.online || s.kind !== "person" ? " on" : ""));
    c.appendChild(d);
    c.appendChild(document.createTextNode("seat " + p + ": " + (p === seat ? "you" : s.kind === "person" ? (s.taken ? "a person" : "free seat") : s.kind + " (bot)")));
    chips.appendChild(c);
  });
  if (!view) { $("hand").replaceChildren(); $("actions").replaceChildren(); return; }
  // the other seats: hand sizes as tile backs, tiles known from the pile
  const others = $("others"); others.replaceChildren();
  for (let i = 1; i < view.num_players; i++) {
    const p = (seat + i) % view.num_players;
    const o = el("div", "other" + (view.current === p && msg.status === "playing" ? " turn" : ""));
    o.dataset.seat = p;
    o.appendChild(el("div", "label", "seat " + p + (view.side_of[p] === view.side_of[seat] ? " (partner)" : "") +
      " · " + view.hand_sizes[p] + " tiles" + (view.mano === p ? " · mano" : "")));
    o.appendChild(backs(Math.min(view.hand_sizes[p], 20), true));
    if (view.known[p].length) {
      o.appendChild(el("div", "label", "known from the pile:"));
      const k = el("div", "known");
      for (const kind of view.known[p]) k.appendChild(tile(kind, view.cards, true));
      o.appendChild(k);
    }
    others.appendChild(o);
  }
  const legal = msg.legal;
  const selKinds = live.selected.map((i) => view.hand[i]);
  // additions the current selection allows, by own meld slot
  const adds = new Map();
  for (const m of legal) if (m.kind === "add" && sameKinds(m.tiles, selKinds)) adds.set(m.slot, m);
  drawMelds($("melds"), view, seat, adds, play);
  drawPile($("pile"), view);
  $("stock-size").textContent = view.stock_size;
  $("muertos").textContent = muertoText(view);
  $("last-move").textContent = msg.last_move ? (msg.last_move.seat === seat ? "you: " : "seat " + msg.last_move.seat + ": ") + msg.last_move.text : "";
  // the own hand
  const hand = $("hand"); hand.replaceChildren();
  view.hand.forEach((kind, i) => {
    const t = tile(kind, view.cards);
    t.dataset.index = i;
    if (live.selected.includes(i)) t.classList.add("selected");
    t.addEventListener("click", () => {
      const at = live.selected.indexOf(i);
      if (at >= 0) live.selected.splice(at, 1); else live.selected.push(i);
      render();
    });
    hand.appendChild(t);
  });
  $("own-label").textContent = "your hand (" + view.hand.length + " tiles)" + (view.mano === seat ? " · you are mano" : "");
  drawActions(msg, view, legal, selKinds, adds);
  drawSheet(msg);
}

function button(id, text, move, primary) {
  const b = el("button", primary ? "primary" : null, text);
  b.id = id; b.type = "button";
  if (move) b.addEventListener("click", () => play(move)); else b.disabled = true;
  return b;
}
function drawActions(msg, view, legal, selKinds, adds) {
  const box = $("actions"); box.replaceChildren();
  const find = (kind) => legal.find((m) => m.kind === kind);
  const stock = $("stock"), pile = $("pile-box");
  stock.classList.remove("clickable"); pile.classList.remove("clickable");
  stock.onclick = null; pile.onclick = null;
  if (!legal.length) {
    if (msg.status === "playing") box.appendChild(el("span", "label", "seat " + view.current + " is playing…"));
    return;
  }
  const phase = view.phase;
  if (phase === "DRAW") {
    const draw = find("draw"), take = find("take_pile");
    box.appendChild(el("span", null, "Your turn: draw. "));
    box.appendChild(button("btn-draw", "Draw from the stock", draw, true));
    box.appendChild(button("btn-take", "Take the pile (" + view.pile.length + ")", take));
    if (draw) { stock.classList.add("clickable"); stock.onclick = () => play(draw); }
    if (take) { pile.classList.add("clickable"); pile.onclick = () => play(take); }
  } else if (phase === "PRIVILEGE") {
    box.appendChild(el("span", null, "You are mano and drew "));
    box.appendChild(tile(view.privilege_tile, view.cards, true));
    box.appendChild(button("btn-keep", "Keep it", find("keep"), true));
    box.appendChild(button("btn-reject", "Reject it and draw again", find("reject")));
  } else if (phase === "CHOOSE_END") {
    box.appendChild(el("span", null, "Which end? "));
    for (const m of legal.filter((x) => x.kind === "choose")) {
      const b = button("btn-choose-" + m.option, m.text, m, m.option === 0);
      b.classList.add("choose-option");
      box.appendChild(b);
    }
  } else if (phase === "PLAY") {
    const meld = legal.find((m) => m.kind === "meld" && sameKinds(m.tiles, selKinds));
    const discard = legal.find((m) => m.kind === "discard" && sameKinds(m.tiles, selKinds));
    box.appendChild(el("span", null, selKinds.length ? "" : "Select tiles: 3 to meld, 1 to add to a meld or to discard. "));
    box.appendChild(button("btn-meld", "Meld the selected tiles", meld, true));
    box.appendChild(button("btn-discard", "Discard the selected tile", discard));
    if (adds.size) box.appendChild(el("span", "label", " or click one of your highlighted melds to add it"));
    if (view.pile_top_required !== null) {
      box.appendChild(el("span", "label", " (you must meld the pile's top tile "));
      box.appendChild(tile(view.pile_top_required, view.cards, true));
      box.appendChild(el("span", "label", ")"));
    }
    if (live.selected.length) {
      const clear = el("button", null, "Clear selection"); clear.type = "button";
      clear.addEventListener("click", () => { live.selected = []; render(); });
      box.appendChild(clear);
    }
  }
}

function scoreTable(rows, numSides) {
  const t = el("table");
  const head = el("tr");
  head.appendChild(el("th", null, "hand"));
  for (let s = 0; s < numSides; s++) head.appendChild(el("th", null, "side " + s));
  t.appendChild(head);
  for (const r of rows) {
    const tr = el("tr");
    tr.appendChild(el("td", null, "hand " + (r.hand + 1) + (r.scores ? "" : " (" + r.end_reason + ")")));
    for (let s = 0; s < numSides; s++) {
      const sc = r.scores ? r.scores[s] : null;
      const td = el("td", null, sc ? sc.total + "  →  " + r.match_scores[s] : "0  →  " + r.match_scores[s]);
      if (sc) td.title = "melded " + sc.melded + ", canastas " + sc.canasta_bonus + ", closing " + sc.closing_bonus +
        ", hand " + sc.hand_penalty + ", muerto " + sc.muerto_penalty;
      tr.appendChild(td);
    }
    t.appendChild(tr);
  }
  return t;
}
function drawSheet(msg) {
  const sheet = $("sheet");
  const over = msg.status === "hand_over" || msg.status === "match_over";
  $("show-sheet").hidden = !(over || msg.history.length);
  if (!over && !live.sheetOpen) { sheet.hidden = true; return; }
  if (over && live.sheetClosedFor === msg.hand_number && !live.sheetOpen) { sheet.hidden = true; return; }
  sheet.hidden = false; sheet.replaceChildren();
  const close = el("button", null, "Look at the table"); close.type = "button"; close.id = "btn-close-sheet";
  close.addEventListener("click", () => { live.sheetOpen = false; live.sheetClosedFor = msg.hand_number; render(); });
  sheet.appendChild(close);
  if (!over) {
    sheet.appendChild(el("h2", null, "Score sheet"));
    sheet.appendChild(scoreTable(msg.history, msg.match_scores.length));
    return;
  }
  const view = msg.view;
  sheet.appendChild(el("h2", null, msg.status === "match_over" ? "Match over" : "Hand " + (msg.hand_number + 1) + " is over"));
  sheet.appendChild(el("p", null, "Ended: " + view.end_reason + (view.closer >= 0 ? " by seat " + view.closer : "")));
  if (view.hand_scores) {
    const t = el("table");
    const head = el("tr"); head.appendChild(el("th", null, "this hand"));
    for (let s = 0; s < view.num_sides; s++) head.appendChild(el("th", null, sideName(view, s, msg.seat)));
    t.appendChild(head);
    for (const key of ["melded", "canasta_bonus", "closing_bonus", "hand_penalty", "muerto_penalty", "total"]) {
      const tr = el("tr"); tr.appendChild(el("td", null, key.replace("_", " ")));
      for (let s = 0; s < view.num_sides; s++) tr.appendChild(el("td", null, String(view.hand_scores[s][key])));
      t.appendChild(tr);
    }
    sheet.appendChild(t);
  }
  sheet.appendChild(el("h3", null, "Score sheet (target " + msg.target + ")"));
  sheet.appendChild(scoreTable(msg.history, view.num_sides));
  if (msg.status === "match_over") {
    const best = Math.max(...msg.match_scores);
    sheet.appendChild(el("p", null, "Side " + msg.match_scores.indexOf(best) + " wins the match with " + best + "."));
  } else {
    const ready = msg.ready.includes(msg.seat);
    const b = el("button", "primary", ready ? "waiting for the others…" : "Next hand");
    b.id = "btn-next"; b.type = "button"; b.disabled = ready;
    b.addEventListener("click", () => send({ type: "next" }));
    sheet.appendChild(b);
  }
}

function showTable(room) {
  $("table").hidden = false;
  $("show-sheet").addEventListener("click", () => { live.sheetOpen = true; render(); });
  $("copy-link").addEventListener("click", () => {
    const link = location.origin + "/?room=" + room;
    if (navigator.clipboard) navigator.clipboard.writeText(link);
    $("message").textContent = "link: " + link;
  });
  connect(room);
}

// ------------------------------------------------------------------ replays
const replay = { hands: [], hand: 0, index: 0 };
window.burakoReplay = replay;

async function openReplayFile(file, errorBox) {
  if (!file) return;
  const text = await file.text();
  const res = await fetch("/api/replay", { method: "POST", headers: { "Content-Type": "application/x-ndjson" }, body: text });
  const data = await res.json();
  if (!res.ok) { errorBox.textContent = data.error; return; }
  $("lobby").hidden = true; $("replay").hidden = false;
  replay.hands = data.hands; replay.hand = 0; replay.index = 0;
  const sel = $("replay-hand"); sel.replaceChildren();
  data.hands.forEach((h, i) => sel.appendChild(new Option("hand " + (i + 1) + ": " + h.agents.join(" vs ") + " (" + h.rules + ", deal " + h.deal_seed + ")", i)));
  drawReplay();
}
function drawReplay() {
  const hand = replay.hands[replay.hand];
  if (!hand) return;
  const frames = hand.frames;
  replay.index = Math.max(0, Math.min(replay.index, frames.length - 1));
  const f = frames[replay.index];
  $("replay-slider").max = frames.length - 1; $("replay-slider").value = replay.index;
  $("replay-index").textContent = "move " + replay.index + " / " + (frames.length - 1);
  $("replay-index").dataset.index = replay.index;
  $("replay-move").textContent = replay.index === 0 ? "the deal (mano: seat " + f.mano + ")" :
    "seat " + f.by + ": " + f.move + (replay.index === frames.length - 1 ? " · hand over: " + hand.end_reason : "");
  const box = $("replay-board"); box.replaceChildren();
  const show = $("show-hands").checked;
  const seats = el("div", "replay-seats");
  for (let p = 0; p < f.num_players; p++) {
    const o = el("div", "other" + (f.current === p && f.phase !== "HAND_OVER" ? " turn" : ""));
    o.dataset.seat = p;
    o.appendChild(el("div", "label", "seat " + p + " · " + hand.agents[p] + " · " + f.hand_sizes[p] + " tiles" + (f.mano === p ? " · mano" : "")));
    const row = el("div", "hand replay-hand");
    if (show) for (const k of f.hands[p]) row.appendChild(tile(k, f.cards, true));
    else row.appendChild(backs(f.hand_sizes[p], true));
    o.appendChild(row);
    seats.appendChild(o);
  }
  box.appendChild(seats);
  const melds = el("div"); drawMelds(melds, f, null, null, null); box.appendChild(melds);
  const pile = el("div"); pile.appendChild(el("div", "label", "discard pile · stock " + f.stock_size + " · " + muertoText(f)));
  const p2 = el("div"); drawPile(p2, f); pile.appendChild(p2); box.appendChild(pile);
  if (replay.index === frames.length - 1 && hand.hand_scores) {
    const t = el("p", null, "totals: " + hand.hand_scores.map((s, i) => "side " + i + " " + s.total).join(", "));
    box.appendChild(t);
  }
}
function setupReplayControls() {
  const go = (i) => { replay.index = i; drawReplay(); };
  $("replay-next").addEventListener("click", () => go(replay.index + 1));
  $("replay-prev").addEventListener("click", () => go(replay.index - 1));
  $("replay-first").addEventListener("click", () => go(0));
  $("replay-last").addEventListener("click", () => go(1e9));
  $("replay-slider").addEventListener("input", (ev) => go(Number(ev.target.value)));
  $("show-hands").addEventListener("change", drawReplay);
  $("replay-hand").addEventListener("change", (ev) => { replay.hand = Number(ev.target.value); replay.index = 0; drawReplay(); });
  $("replay-file").addEventListener("change", (ev) => openReplayFile(ev.target.files[0], $("replay-error")));
  $("replay-file-2").addEventListener("change", (ev) => openReplayFile(ev.target.files[0], $("replay-move")));
  document.addEventListener("keydown", (ev) => {
    if ($("replay").hidden) return;
    if (ev.key === "ArrowRight") go(replay.index + 1);
    if (ev.key === "ArrowLeft") go(replay.index - 1);
  });
}

// ------------------------------------------------------------------ start
setupReplayControls();
const params = new URLSearchParams(location.search);
if (params.get("room")) showTable(params.get("room"));
else showLobby();
