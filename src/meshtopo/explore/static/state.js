// The page's one state, shared by its modules, and its JSON calls to /api/*.

export const state = {
  ui: null,
  result: null, // last good /api/groups answer
  request: null,
  origin: null, // the dump collective being shown, if any
  step: -1, // -1: all groups shown
  player: null,
  pending: null, // the debounce timer
  seq: 0,
  controller: null,
  renders: 0,
  timing: null,
  views: [],
  panes: [],
  entries: [], // device-assignment table cells by flattened id
  roles: null,
  deviceCell: null, // Map device id -> flattened index
  focus: 0, // the roving cell (flattened id)
  lit: [], // elements carrying highlight classes
  dump: null,
  namedDump: null, // the /api/dump answer for the file named on the command line
  canvas: null,
};

export async function postJson(path, body, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  const value = await response.json();
  if (!response.ok) {
    const error = new Error(value.error ? value.error.message : `HTTP ${response.status}`);
    error.detail = value.error || {};
    error.status = response.status;
    throw error;
  }
  return value;
}
