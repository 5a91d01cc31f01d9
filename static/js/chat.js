// The chat page: one websocket per tab; every frame of the user's turns arrives here, whichever
// tab sent the message. Replies stream token by token; the final frame carries the stored reply.
(() => {
  "use strict";
  const chat = document.getElementById("chat");
  if (!chat) return;
  const transcript = () => document.getElementById("transcript");
  const form = document.getElementById("composer");
  const input = document.getElementById("message");
  const sendButton = document.getElementById("send");
  const counter = document.getElementById("char-count");
  const alertBox = document.getElementById("chat-alert");
  const connection = document.getElementById("connection");
  const template = document.getElementById("turn-template");
  const maxChars = Number(chat.dataset.maxChars || 4000);
  const live = new Map(); // turn_id -> <article>
  let socket = null;
  let attempts = 0;
  let everOpened = false;
  let alertTimer = null;
  // Messages sent and not yet taken by the server: each one the server refuses (a rate limit's
  // error names it) goes back to the composer with its files, so that in a burst past the rate
  // limit no refused message is lost.
  const unconfirmed = [];
  const attachInput = document.getElementById("attach");
  const pendingList = document.getElementById("pending-files");
  const maxFiles = Number(form.dataset.maxFiles || 5);
  const maxFileBytes = Number(form.dataset.maxFileBytes || 10485760);
  const pending = []; // {name, cid, state: "uploading" | "ready" | "failed", li}

  // --- connection -------------------------------------------------------------------------
  function setConnection(state, label) {
    connection.dataset.state = state;
    connection.querySelector(".label").textContent = label;
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}${chat.dataset.socketPath}`);
    socket.addEventListener("open", () => {
      attempts = 0;
      setConnection("open", "Connected");
      if (everOpened) resync();
      everOpened = true;
    });
    socket.addEventListener("message", (event) => {
      let frame;
      try { frame = JSON.parse(event.data); } catch { return; }
      handle(frame);
    });
    socket.addEventListener("close", () => {
      attempts += 1;
      const delay = Math.min(15000, 500 * 2 ** Math.min(attempts, 5));
      if (attempts > 4) {
        setConnection("closed", "Disconnected. If you signed out elsewhere, reload the page to sign in again.");
      } else {
        setConnection("connecting", "Connection lost, reconnecting…");
      }
      setTimeout(connect, delay);
    });
  }

  // A tab that was offline may have missed turns: reload the transcript from the server.
  function resync() {
    if (!window.htmx) return;
    htmx.ajax("GET", chat.dataset.transcriptUrl, { target: "#transcript", swap: "outerHTML" })
      .then(() => scrollToEnd(true));
  }

  // --- rendering ----------------------------------------------------------------------------
  function nearBottom() {
    const t = transcript();
    return t.scrollHeight - t.scrollTop - t.clientHeight < 120;
  }

  // Set at once, not smoothly: a smooth scroll still under way reads as "not near the bottom", and
  // the next reply would stop being followed. "Jump to latest" shows while the reader is scrolled up.
  function scrollToEnd(force) {
    const t = transcript();
    if (force || nearBottom()) t.scrollTo({ top: t.scrollHeight, behavior: "instant" });
    showJump();
  }

  const jump = document.createElement("button");
  jump.type = "button";
  jump.className = "jump-latest";
  jump.hidden = true;
  jump.textContent = "↓ Jump to latest";
  jump.addEventListener("click", () => { scrollToEnd(true); input.focus(); });
  chat.append(jump);
  function showJump() { jump.hidden = nearBottom(); }
  chat.addEventListener("scroll", showJump, true); // scroll does not bubble: caught on its way down

  function newTurn(turnId, query, sona, mine) {
    const stick = mine || nearBottom();
    document.getElementById("empty-state")?.remove();
    const article = template.content.firstElementChild.cloneNode(true);
    article.dataset.turnId = turnId;
    if (live.size === 0) article.querySelector(".thinking-label").textContent = "thinking";
    const queryBubble = article.querySelector(".query");
    if (query) queryBubble.textContent = query; else queryBubble.closest(".msg").remove();
    const name = sona || "assistant";
    article.querySelector(".who").textContent = name;
    article.querySelector(".avatar").textContent = name.charAt(0).toUpperCase();
    article.querySelector("time").textContent = new Date().toLocaleString("en-GB", {
      day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hour12: false });
    transcript().appendChild(article);
    live.set(turnId, article);
    scrollToEnd(stick);
    return article;
  }

  // Queued behind the user's previous turn until the server starts this one.
  // A turn that comes while the server is still loading its memory models waits for them.
  function startTurn(frame) {
    const article = turnFor(frame);
    if (article.dataset.state === "queued") {
      article.dataset.state = "thinking";
      article.querySelector(".thinking-label").textContent = frame.loading
        ? "loading the memory models (only after a server start)…" : "thinking";
    }
  }

  function showModels(state) {
    if (state === "loading") setConnection("loading", "Connected · loading the memory models…");
    else if (connection.dataset.state === "loading") setConnection("open", "Connected");
  }

  function turnFor(frame) {
    return live.get(frame.turn_id) || newTurn(frame.turn_id, "", frame.sona);
  }

  function appendToken(frame) {
    const stick = nearBottom();
    const article = turnFor(frame);
    const reply = article.querySelector(".reply");
    if (article.dataset.state === "thinking" || article.dataset.state === "queued") {
      reply.textContent = "";
      article.dataset.state = "streaming";
    }
    reply.append(document.createTextNode(frame.text));
    scrollToEnd(stick);
  }

  function finishTurn(frame) {
    const stick = nearBottom();
    let article = turnFor(frame);
    // A tab reloaded mid-turn shows the stored (pending) page: complete that one instead.
    const stored = transcript().querySelector(`.turn[data-page-id="${frame.page_id}"]`);
    if (stored && stored !== article) {
      article.remove();
      article = stored;
      live.set(frame.turn_id, stored);
    }
    const reply = article.querySelector(".reply");
    reply.classList.remove("awaiting");
    reply.textContent = frame.reply;
    article.dataset.state = "done";
    article.dataset.pageId = frame.page_id;
    article.dataset.seq = frame.seq;
    article.querySelector(".offline-tag")?.toggleAttribute("hidden", !frame.offline);
    if (frame.files?.length && !article.querySelector(".attached")) article.querySelector(".msg.user").after(attachedList(frame.files));
    if (!article.querySelector("details.recall")) article.querySelector(".body").append(recallToggle(frame.recall_url));
    keepOrder(article);
    live.delete(frame.turn_id);
    document.body.dispatchEvent(new CustomEvent("turn-done", { bubbles: true }));
    scrollToEnd(stick);
  }

  function attachedList(files) {
    const list = document.createElement("ul");
    list.className = "attached";
    for (const file of files) {
      const link = document.createElement("a");
      link.href = file.url;
      link.download = "";
      link.title = `${file.media_type}, ${file.size} bytes`;
      link.textContent = file.name;
      const item = document.createElement("li");
      item.append(link);
      list.append(item);
    }
    return list;
  }

  function recallToggle(url) {
    const details = document.createElement("details");
    details.className = "recall";
    details.setAttribute("hx-get", url);
    details.setAttribute("hx-trigger", "toggle once");
    details.setAttribute("hx-target", "find .recall-body");
    details.innerHTML = '<summary>What I remembered</summary><div class="recall-body"><p class="muted">Loading…</p></div>';
    if (window.htmx) htmx.process(details);
    return details;
  }

  // Turns are shown in the order they were stored (seq); with several server processes two
  // tabs' messages can reach the database in a different order than they reached this tab, and
  // finish in yet another. A turn that learns its seq moves before the first stored turn with a
  // larger seq, or else after the last stored turn with a smaller one; pending turns stay put.
  function keepOrder(article) {
    const seq = Number(article.dataset.seq);
    const stored = [...transcript().querySelectorAll(".turn")]
      .filter((other) => other !== article && other.dataset.seq);
    const later = stored.find((other) => Number(other.dataset.seq) > seq);
    if (later && (later.compareDocumentPosition(article) & Node.DOCUMENT_POSITION_FOLLOWING)) {
      later.before(article);
      return;
    }
    const earlier = stored.filter((other) => Number(other.dataset.seq) < seq).pop();
    if (earlier && (earlier.compareDocumentPosition(article) & Node.DOCUMENT_POSITION_PRECEDING)) {
      earlier.after(article);
    }
  }

  function failTurn(frame) {
    const article = turnFor(frame);
    article.dataset.state = "error";
    article.querySelector(".reply").textContent = frame.error;
    live.delete(frame.turn_id);
    showAlert(frame.error);
  }

  function showAlert(message, kind) {
    alertBox.textContent = message;
    alertBox.className = `chat-alert${kind ? " " + kind : ""}`;
    alertBox.hidden = false;
    clearTimeout(alertTimer);
    alertTimer = setTimeout(() => { alertBox.hidden = true; }, 8000);
  }

  // --- "remembered" notices: what a turn's after-reply work did to facts, each with an undo ----
  const memoryVerbs = { remembered: "Remembered", changed: "Updated", forgotten: "Forgot" };

  function showMemoryChanged(frame, tries = 0) {
    const article = transcript().querySelector(`.turn[data-page-id="${frame.page_id}"]`);
    if (!article) { // the notice can outrun the reply's last frame: wait for the turn a little
      if (tries < 20) setTimeout(() => showMemoryChanged(frame, tries + 1), 250);
      return;
    }
    let notice = article.querySelector(".memory-notice");
    if (!notice) {
      notice = document.createElement("ul");
      notice.className = "memory-notice";
      notice.setAttribute("aria-live", "polite");
      article.querySelector(".body").append(notice);
    }
    for (const change of frame.changes) {
      if (notice.querySelector(`[data-fact-id="${change.fact_id}"]`)) continue;
      notice.append(memoryChangeItem(change));
    }
    memoryCountsChanged();
  }

  // The sidebar's counts follow what memory holds: refreshed when a notice arrives or is undone.
  // An opened panel is scrolled into the transcript's view, not left under the composer.
  document.addEventListener("toggle", (event) => { // "toggle" does not bubble: caught on its way down
    if (event.target.matches?.("details.recall")) revealOpened(event.target);
  }, true);

  function revealOpened(details) {
    if (!details.open) return;
    const reveal = () => details.scrollIntoView({ block: "nearest" });
    reveal();
    details.addEventListener("htmx:afterSwap", reveal, { once: true }); // once its contents arrive
  }

  function memoryCountsChanged() {
    document.body.dispatchEvent(new CustomEvent("memory-changed", { bubbles: true }));
  }

  function memoryChangeItem(change) {
    const item = document.createElement("li");
    item.dataset.factId = change.fact_id;
    item.dataset.action = change.action;
    const words = document.createElement("span");
    words.className = "memory-change";
    const was = change.previous ? ` (was: ${change.previous})` : "";
    words.textContent = `${memoryVerbs[change.action] || "Memory"}: ${change.text}${was}`;
    item.append(words);
    if (change.undo_url && change.action !== "forgotten") {
      const undo = document.createElement("button");
      undo.type = "button";
      undo.className = "memory-undo";
      undo.textContent = "Undo";
      undo.addEventListener("click", () => undoMemoryChange(item, change, undo));
      item.append(" ", undo);
    }
    return item;
  }

  async function undoMemoryChange(item, change, button) {
    button.disabled = true;
    try {
      const response = await fetch(change.undo_url, { method: "POST", headers: { "X-CSRFToken": csrfToken() },
                                                       credentials: "same-origin" });
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      const body = await response.json();
      const back = body.current_again?.length ? ` ${body.current_again.join("; ")} again.` : "";
      item.querySelector(".memory-change").textContent = `Undone: ${change.text}.${back}`;
      item.dataset.action = "undone";
      button.remove();
      memoryCountsChanged();
    } catch (error) {
      button.disabled = false;
      showAlert(`Could not undo: ${error.message}`);
    }
  }

  function giveBack(sent) {
    if (!sent) return;
    const words = input.value.split("\n\n");
    if (!words.includes(sent.text)) input.value = input.value ? `${input.value}\n\n${sent.text}` : sent.text;
    sent.files.forEach((entry) => { if (!pending.some((p) => p.cid === entry.cid)) addPending(entry); });
    updateCounter();
  }

  function handle(frame) {
    switch (frame.type) {
      case "ready":
        if (frame.max_message_chars) chat.dataset.maxChars = frame.max_message_chars;
        showModels(frame.models);
        break;
      case "models.ready": showModels(frame.models); break;
      case "turn.user": {
        const taken = unconfirmed.findIndex((sent) => sent.text === frame.text);
        const mine = taken >= 0; // this tab's own message: always followed
        if (mine) unconfirmed.splice(taken, 1);
        newTurn(frame.turn_id, frame.text, frame.sona, mine);
        break;
      }
      case "turn.started": startTurn(frame); break;
      case "turn.token": appendToken(frame); break;
      case "turn.done": finishTurn(frame); break;
      case "turn.error": failTurn(frame); break;
      case "memory.changed": showMemoryChanged(frame); break;
      case "error":
        showAlert(frame.error, frame.code === "rate_limited" ? "info" : "");
        { // the refused message, named by the error; else the latest sent, as before
          const named = frame.text ? unconfirmed.findIndex((sent) => sent.text === frame.text) : -1;
          giveBack(named >= 0 ? unconfirmed.splice(named, 1)[0] : unconfirmed.pop());
        }
        break;
      default: break;
    }
  }

  // --- composing ----------------------------------------------------------------------------
  function currentSona() {
    const select = document.getElementById("sona-select");
    return select ? select.value : null;
  }

  function updateCounter() {
    const length = input.value.trim().length;
    counter.textContent = length > maxChars * 0.8 ? `${length} / ${maxChars}` : "";
    counter.classList.toggle("over", length > maxChars);
    sendButton.disabled = length > maxChars || pending.some((entry) => entry.state === "uploading");
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight + 2, 200)}px`;
  }

  // --- attaching files: each is uploaded as soon as it is picked; the message names them by content id
  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; } catch { return ""; }
  }

  function renderPending() {
    pendingList.hidden = pending.length === 0;
    sendButton.disabled = pending.some((entry) => entry.state === "uploading") || input.value.trim().length > maxChars;
  }

  function addPending(entry) {
    const li = document.createElement("li");
    li.dataset.state = entry.state;
    const label = document.createElement("span");
    label.textContent = entry.state === "uploading" ? `${entry.name} (uploading…)` : entry.name;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "×";
    remove.setAttribute("aria-label", `Remove ${entry.name}`);
    remove.addEventListener("click", () => {
      pending.splice(pending.indexOf(entry), 1);
      li.remove();
      renderPending();
    });
    li.append(label, remove);
    entry.li = li;
    pendingList.append(li);
    if (!pending.includes(entry)) pending.push(entry);
    renderPending();
    return entry;
  }

  async function upload(file) {
    const entry = addPending({ name: file.name, cid: null, state: "uploading" });
    const body = new FormData();
    body.append("file", file);
    try {
      const response = await fetch(form.dataset.uploadUrl, { method: "POST", body, headers: { "X-CSRFToken": csrfToken() },
                                                             credentials: "same-origin" });
      const data = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(data.message || `${file.name}: the upload failed (${response.status}).`);
      entry.cid = data.cid;
      entry.state = "ready";
      entry.li.dataset.state = "ready";
      entry.li.querySelector("span").textContent = data.name;
      entry.li.title = `${data.media_type}, ${data.size} bytes${data.text_chars ? `, ${data.text_chars} characters of text` : ""}`;
    } catch (error) {
      entry.state = "failed";
      entry.li.dataset.state = "failed";
      entry.li.querySelector("span").textContent = `${file.name}: not attached`;
      showAlert(error instanceof TypeError ? `${file.name}: the upload failed; check your connection.` : error.message);
    }
    renderPending();
  }

  attachInput?.addEventListener("change", () => {
    for (const file of attachInput.files) {
      if (pending.filter((entry) => entry.state !== "failed").length >= maxFiles) {
        showAlert(`A message carries at most ${maxFiles} files.`);
        break;
      }
      if (file.size > maxFileBytes) { showAlert(`${file.name} is ${file.size} bytes; a file may be at most ${maxFileBytes} bytes.`); continue; }
      upload(file);
    }
    attachInput.value = "";
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) { if (pending.length) showAlert("Say something about the files you attach."); return; }
    if (text.length > maxChars) { showAlert(`Your message is ${text.length} characters long; the limit is ${maxChars}.`); return; }
    if (pending.some((entry) => entry.state === "uploading")) { showAlert("Wait until the files are uploaded."); return; }
    if (!socket || socket.readyState !== WebSocket.OPEN) { showAlert("Not connected yet; your message was not sent. Try again in a moment."); return; }
    const ready = pending.filter((entry) => entry.state === "ready");
    socket.send(JSON.stringify({ type: "message", text, sona: currentSona(), files: ready.map((entry) => entry.cid) }));
    unconfirmed.push({ text, files: ready.map(({ name, cid, state }) => ({ name, cid, state })) });
    input.value = "";
    pending.splice(0).forEach((entry) => entry.li.remove());
    renderPending();
    updateCounter();
    alertBox.hidden = true;
  });

  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  input.addEventListener("input", updateCounter);

  // The sona bar is swapped by htmx; keep the placeholder in step with the chosen sona.
  // A note swapped in with data-dismiss-after (the profile card's "Thanks") goes away by itself.
  document.body.addEventListener("htmx:afterSwap", () => {
    const select = document.getElementById("sona-select");
    if (select) input.placeholder = `Message ${select.options[select.selectedIndex].text}…`;
    document.querySelectorAll("[data-dismiss-after]:not([data-dismissing])").forEach((note) => {
      note.dataset.dismissing = "1";
      setTimeout(() => note.remove(), Number(note.dataset.dismissAfter));
    });
  });
  document.body.addEventListener("click", (event) => {
    const close = event.target.closest("[data-dismiss]");
    if (close) close.parentElement.remove();
  });

  scrollToEnd(true);
  updateCounter();
  connect();
  input.focus();
})();
