// Figures that fill their cell: when the enclosing .pulsarlab-fit container is attached, changes width or gets a
// new plotly figure, fire one window "resize" so plotly.js resizes every responsive figure to its container.
function render({ el }) {
  let container = null;
  let timer = null;
  let width = -1;
  let plots = 0;
  const kick = () => {
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      window.dispatchEvent(new Event("resize"));
    }, 50);
  };
  const resized = new ResizeObserver(() => {
    const w = Math.round(container.getBoundingClientRect().width);
    if (w > 0 && w !== width) {
      width = w;
      kick();
    }
  });
  const added = new MutationObserver(() => {
    const n = container.querySelectorAll(".js-plotly-plot .main-svg").length;
    if (n !== plots) {
      plots = n;
      kick();
    }
  });
  let tries = 0;
  const attach = () => {
    container = el.closest(".pulsarlab-fit");
    if (!container) {
      if (tries++ < 600) requestAnimationFrame(attach);
      return;
    }
    resized.observe(container);
    added.observe(container, { childList: true, subtree: true });
  };
  attach();
  return () => {
    resized.disconnect();
    added.disconnect();
    if (timer !== null) clearTimeout(timer);
  };
}

export default { render };
