// The player's keyboard: -> / <- step, space play/pause, Home/End first/last frame.
// Keys go to one player: the one holding the focus, else (in presenter mode, body.pulsarlab-present) the player
// that fills most of the window. Every instance keeps a handler; only the chosen player's handler sends.
// A click anywhere in a player (a figure, the explanation, a blank spot) gives it the focus: JupyterLab's notebook
// moves the focus to a cell on every click in an output, so the player takes it back once the click is over.
// Escape hands the focus back to what holds the player: its notebook cell in JupyterLab, the page's scrolling
// container in presenter mode.
const KEYS = new Set(["ArrowRight", "ArrowLeft", " ", "Home", "End"]);

function visibleArea(el) {
  const r = el.getBoundingClientRect();
  const w = Math.min(r.right, window.innerWidth) - Math.max(r.left, 0);
  const h = Math.min(r.bottom, window.innerHeight) - Math.max(r.top, 0);
  return w > 0 && h > 0 ? w * h : 0;
}

function chosenPlayer() {
  const players = Array.from(document.querySelectorAll(".pulsarlab-player"));
  const focused = players.find((p) => p.contains(document.activeElement));
  if (focused) return focused;
  if (!document.body.classList.contains("pulsarlab-present")) return null;
  let best = null;
  let bestArea = 0;
  for (const p of players) {
    const a = visibleArea(p);
    if (a > bestArea) {
      best = p;
      bestArea = a;
    }
  }
  return best;
}

function typing(target) {
  const tag = target && target.tagName;
  return (tag === "INPUT" && target.type !== "range" && target.type !== "button") || tag === "TEXTAREA" ||
    tag === "SELECT" || (target && target.isContentEditable);
}

// a control that takes the focus itself when clicked (its own keys, e.g. a dropdown's arrows, stay its own)
function focusable(target, player) {
  for (let e = target; e && e !== player; e = e.parentElement) {
    if (e.matches("input, select, textarea, button, a[href], [contenteditable], [tabindex]:not([tabindex='-1'])")) {
      return true;
    }
  }
  return false;
}

function render({ model, el }) {
  el.classList.add("pulsarlab-player-keys");
  const player = () => el.closest(".pulsarlab-player");
  const onKey = (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    const mine = player();
    if (!mine) return;
    if (event.key === "Escape" && mine.contains(document.activeElement)) {
      const holder = mine.parentElement && mine.parentElement.closest("[tabindex]");
      if (holder) holder.focus({ preventScroll: true });
      else document.activeElement.blur();
      return;
    }
    if (!KEYS.has(event.key) || chosenPlayer() !== mine) return;
    event.preventDefault();
    event.stopPropagation();
    model.send({ key: event.key });
  };
  // a press inside the player that is not on a control: once the press is over (and the notebook has moved the
  // focus to the cell), the player takes the focus
  let pressed = false;
  const take = () => {
    const mine = player();
    if (pressed && mine && !mine.contains(document.activeElement)) mine.focus({ preventScroll: true });
  };
  const onDown = (event) => {
    const mine = player();
    pressed = Boolean(mine && event.button === 0 && mine.contains(event.target) && !focusable(event.target, mine));
    if (!pressed) return;
    if (!mine.hasAttribute("tabindex")) mine.tabIndex = -1;
    setTimeout(take, 0);
  };
  const onUp = () => {
    if (!pressed) return;
    setTimeout(() => {
      take();
      pressed = false;
    }, 0);
  };
  window.addEventListener("keydown", onKey, true);
  window.addEventListener("pointerdown", onDown, true);
  window.addEventListener("pointerup", onUp, true);
  return () => {
    window.removeEventListener("keydown", onKey, true);
    window.removeEventListener("pointerdown", onDown, true);
    window.removeEventListener("pointerup", onUp, true);
  };
}

export default { render };
