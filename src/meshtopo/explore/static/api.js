// The page's JSON calls to /api/*. Refusals come back in the body of a 200 (the request says
// ``X-Meshtopo-Refusal: body``), so that a refused dial is not a failed load in the console;
// ``error.status`` keeps the 4xx it stands for.

export async function postJson(path, body, signal) {
  return answer(await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Meshtopo-Refusal": "body" },
    body: JSON.stringify(body),
    signal,
  }));
}

// The longest query string sent beside a module posted as text (servers cap a request line).
const QUERY_LIMIT = 8000;

// POST ``body`` to /api/order with its module ``text`` as the body itself (text/plain, no JSON
// around tens of megabytes of dump) and its other fields in the query string, each as JSON;
// as JSON when they would not fit there (a large device table) or there is no ``text``.
export async function postOrder(body, signal) {
  const { text, ...fields } = body;
  const query = new URLSearchParams(
    Object.entries(fields).map(([key, value]) => [key, JSON.stringify(value)])).toString();
  if (typeof text !== "string" || query.length > QUERY_LIMIT) {
    return postJson("/api/order", body, signal);
  }
  return answer(await fetch(query ? `/api/order?${query}` : "/api/order", {
    method: "POST",
    headers: { "Content-Type": "text/plain; charset=utf-8", "X-Meshtopo-Refusal": "body" },
    body: text,
    signal,
  }));
}

// The decoded answer of ``response``; a refusal (in its body or its status) is thrown.
async function answer(response) {
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
