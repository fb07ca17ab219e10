// The live list's stream: GET /api/v1/attestations/stream (server-sent
// events). The browser's EventSource resumes by itself with Last-Event-ID
// after a dropped connection; when the server ends the stream with an
// `error` event, or refuses it (a 429, a 503), this opens it again with
// the last id seen (?after=), waiting longer each time (2 s doubling to
// 60 s). No polling: one connection per tab, one request against the
// rate limit per (re)connection.
//
// since is the list cursor of the newest attestation already shown: the
// stream starts after it, so none that landed between the list's fetch
// and the stream's opening is missed.
export function liveStream(filters, on, since = "") {
  let es = null, lastId = since, timer = null, wait = 2000, stopped = false;
  const connect = () => {
    if (stopped) return;
    const q = new URLSearchParams(filters);
    if (lastId) q.set("after", lastId);
    const s = q.toString();
    es = new EventSource("/api/v1/attestations/stream" + (s ? "?" + s : ""));
    const parse = (e) => { try { return JSON.parse(e.data); } catch { return null; } };
    es.addEventListener("open", () => { wait = 2000; on.state("live"); });
    es.addEventListener("attestation", (e) => {
      if (e.lastEventId) lastId = e.lastEventId;
      const a = parse(e);
      if (a) on.attestation(a);
    });
    es.addEventListener("commitment", (e) => { const a = parse(e); if (a) on.commitment(a); });
    es.addEventListener("removed", (e) => { const r = parse(e); if (r) on.removed(r); });
    es.addEventListener("error", (e) => {
      // An `error` event from the server carries the envelope: the stream
      // ends. A connection error has no data: EventSource retries itself
      // unless it gave up (CLOSED).
      const server = typeof e.data === "string";
      if (server) {
        const env = parse(e);
        on.state("paused: " + ((env && env.error && env.error.message) || "the stream ended") + "; reconnecting");
      }
      if (server || es.readyState === EventSource.CLOSED) {
        es.close();
        on.state("reconnecting in " + Math.round(wait / 1000) + " s");
        clearTimeout(timer);
        timer = setTimeout(connect, wait);
        wait = Math.min(wait * 2, 60000);
      } else {
        on.state("reconnecting");
      }
    });
  };
  connect();
  return () => { stopped = true; clearTimeout(timer); if (es) es.close(); };
}
