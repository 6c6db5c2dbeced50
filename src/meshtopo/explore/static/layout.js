// Where each cell of an /api/groups answer sits in each view, and the headers that name the
// rows and columns. A view is {key, title, rows, cols, row, col, at, rowHeads, colHeads,
// corner}: row[f]/col[f] place cell f (-1: not in this view), at[row * cols + col] is the
// cell there (-1: empty), and each header level is a list of {label, span}.

const WRAP_ABOVE = 32; // a single row or column of more cells than this is wrapped

// The divisor of n nearest above sqrt(n), or ceil(sqrt(n)) when none is near.
function squareColumns(n) {
  const root = Math.floor(Math.sqrt(n));
  for (let cols = Math.max(root, 1); cols <= Math.min(n, 2 * root + 1); cols++) {
    if (n % cols === 0) return cols;
  }
  return Math.ceil(Math.sqrt(n));
}

function build(key, title, n, rows, cols, slotOf) {
  const row = new Int32Array(n).fill(-1);
  const col = new Int32Array(n).fill(-1);
  const at = new Int32Array(rows * cols).fill(-1);
  for (let f = 0; f < n; f++) {
    const slot = slotOf(f);
    if (slot < 0) continue;
    row[f] = Math.floor(slot / cols);
    col[f] = slot % cols;
    at[slot] = f;
  }
  return { key, title, rows, cols, row, col, at, rowHeads: [], colHeads: [], corner: "" };
}

const level = (count, span, label) =>
  Array.from({ length: count }, (_, i) => ({ label: label(i), span }));

// A wrapped run, cols across: rows named by their first cell (``name(f)``), columns by offset.
function wrapHeads(view, name) {
  view.rowHeads = [level(view.rows, 1, (r) => (view.at[r * view.cols] < 0 ? "" : name(view.at[r * view.cols])))];
  view.colHeads = [level(view.cols, 1, (c) => `+${c}`)];
}

// Cells by mesh coordinates: the leading half of the axes down, the rest across (so that a
// row-major mesh position p sits at row p div cols, column p mod cols), headers nested.
export function meshView(result) {
  const axes = result.mesh.axes;
  const n = result.grid.devices;
  const position = result.cells.mesh_position;
  const split = axes.length === 1 ? 0 : Math.floor(axes.length / 2);
  const down = axes.slice(0, split);
  const across = axes.slice(split);
  let cols = across.reduce((p, a) => p * a.size, 1);
  let rows = n / cols;
  const wrapped = axes.length === 1 && n > WRAP_ABOVE;
  if (wrapped) {
    cols = squareColumns(n);
    rows = Math.ceil(n / cols);
  }
  const view = build("mesh", "mesh positions", n, rows, cols, (f) => position[f]);
  if (wrapped) {
    wrapHeads(view, (f) => `${axes[0].name}=${result.cells.mesh_coordinates[0][f]}`);
  } else {
    // Each header names its axis's coordinate of the first cell under it (or beside it), as
    // the answer's ``cells.mesh_coordinates`` give it.
    const coords = result.cells.mesh_coordinates;
    const heads = (list, first, lines, cellIn) => {
      let span = lines;
      return list.map((axis, k) => {
        span /= axis.size;
        return Array.from({ length: lines / span }, (_, j) => {
          const f = cellIn(j * span);
          return { label: f < 0 ? "" : `${axis.name}=${coords[first + k][f]}`, span };
        });
      });
    };
    const inColumn = (c) => {
      for (let r = 0; r < rows; r++) if (view.at[r * cols + c] >= 0) return view.at[r * cols + c];
      return -1;
    };
    const inRow = (r) => {
      for (let c = 0; c < cols; c++) if (view.at[r * cols + c] >= 0) return view.at[r * cols + c];
      return -1;
    };
    view.rowHeads = heads(down, 0, rows, inRow);
    view.colHeads = heads(across, split, cols, inColumn);
  }
  view.corner = down.map((a) => a.name).join(" · ") + (down.length ? " \\ " : "") +
    across.map((a) => a.name).join(" · ");
  view.missing = position.filter((p) => p < 0).length;
  return view;
}

// Cells by flattened id f = r*P + p: replicas down, partitions across (wrapped when one of
// them is 1 and the run is long).
export function flatView(result) {
  const { replicas: R, partitions: P, devices: n } = result.grid;
  if (Math.min(R, P) > 1 || n <= WRAP_ABOVE) {
    const view = build("flat", "flattened id (replica × partition)", n, R, P, (f) => f);
    view.rowHeads = [level(R, 1, (r) => `r${r}`)];
    view.colHeads = [level(P, 1, (p) => `p${p}`)];
    view.corner = "replica \\ partition";
    return view;
  }
  const cols = squareColumns(n);
  const view = build("flat", "flattened id", n, Math.ceil(n / cols), cols, (f) => f);
  wrapHeads(view, (f) => `f${f}`);
  view.corner = R === 1 ? "f = partition" : "f = replica";
  return view;
}

// Cells by device id, in as many columns as the flattened view, so that the two can be read
// against each other: a group contiguous in one is shuffled in the other.
export function deviceView(result, flat) {
  const ids = result.cells.device_id;
  const n = ids.length;
  // Device ids are distinct; when they are 0..n-1 (as almost always) a device's slot is its
  // id, else its rank among the ids.
  let order;
  if (ids.every((d) => d >= 0 && d < n)) {
    order = new Int32Array(n);
    ids.forEach((d, f) => { order[d] = f; });
  } else {
    order = Array.from({ length: n }, (_, f) => f).sort((a, b) => ids[a] - ids[b]);
  }
  const slot = new Int32Array(n);
  order.forEach((f, k) => { slot[f] = k; });
  const cols = flat.cols;
  const view = build("device", "device id", n, Math.ceil(n / cols), cols, (f) => slot[f]);
  const first = (r) => (r * cols < n ? ids[order[r * cols]] : "");
  view.rowHeads = [level(view.rows, 1, (r) => `d${first(r)}`)];
  view.colHeads = [level(cols, 1, (c) => `+${c}`)];
  view.corner = "device id";
  return view;
}

// Every view the answer can be drawn in: mesh positions (with a mesh), flattened id, device id.
export function viewsOf(result) {
  const flat = flatView(result);
  const views = [flat, deviceView(result, flat)];
  if (result.mesh && result.cells.mesh_position) views.unshift(meshView(result));
  return views;
}

// The cell one step from f in direction (dr, dc), skipping empty slots; f itself at an edge.
export function neighbour(view, f, dr, dc) {
  let r = view.row[f];
  let c = view.col[f];
  for (;;) {
    r += dr;
    c += dc;
    if (r < 0 || c < 0 || r >= view.rows || c >= view.cols) return f;
    const g = view.at[r * view.cols + c];
    if (g >= 0) return g;
  }
}
