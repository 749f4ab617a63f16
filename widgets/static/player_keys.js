// The player's keyboard: -> / <- step, space play/pause, Home/End first/last frame.
// Keys go to one player: the one holding the focus, else (in presenter mode, body.pulsarlab-present) the player
// that fills most of the window. Every instance keeps a handler; only the chosen player's handler sends.
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

function render({ model, el }) {
  el.classList.add("pulsarlab-player-keys");
  const onKey = (event) => {
    if (!KEYS.has(event.key) || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    const player = el.closest(".pulsarlab-player");
    if (!player || chosenPlayer() !== player) return;
    event.preventDefault();
    event.stopPropagation();
    model.send({ key: event.key });
  };
  document.addEventListener("keydown", onKey, true);
  return () => document.removeEventListener("keydown", onKey, true);
}

export default { render };
