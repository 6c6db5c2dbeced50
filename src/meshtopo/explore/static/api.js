// The page's JSON calls to /api/*. Refusals come back in the body of a 200 (the request says
// ``X-Meshtopo-Refusal: body``), so that a refused dial is not a failed load in the console;
// ``error.status`` keeps the 4xx it stands for.

export async function postJson(path, body, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Meshtopo-Refusal": "body" },
    body: JSON.stringify(body),
    signal,
  });
  const value = await response.json();
  const refusal = value && typeof value.error === "object" && value.error !== null ? value.error : null;
  if (!response.ok || refusal) {
    const error = new Error(refusal ? refusal.message : `HTTP ${response.status}`);
    error.detail = refusal || {};
    error.status = refusal && refusal.status ? refusal.status : response.status;
    throw error;
  }
  return value;
}
