import { describe, expect, it } from "vitest";
import { HttpModel, ProfviewClient, decodeReply, openTrace, runNote, type Fetcher, type SessionStatus } from "../src/transport_http";
import shared from "../../tests/shared_fixtures/server_reply.json";

const fromHex = (h: string): Uint8Array => Uint8Array.from(h.match(/../g) ?? [], (b) => parseInt(b, 16));
const bytesOf = (v: unknown): number[] => {
  const dv = v as DataView;
  return Array.from(new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength));
};

describe("transport_http", () => {
  it("decodes the server's framed reply (shared fixture) into the message and buffers", () => {
    const body = fromHex(shared.hex);
    const { msg, buffers } = decodeReply(body.buffer.slice(0) as ArrayBuffer);
    expect(buffers.map(bytesOf)).toEqual(shared.buffers.map((h) => Array.from(fromHex(h))));
    for (const [k, v] of Object.entries(shared.msg)) expect(msg[k]).toEqual(v);
    for (const [k, h] of Object.entries(shared.bytes_values)) expect(bytesOf(msg[k])).toEqual(Array.from(fromHex(h)));
    // buffers are views on the body at 8-aligned offsets (Float64Array-safe), no copies
    for (const b of buffers) expect(b.byteOffset % 8).toBe(0);
  });

  it("refuses a body without the PVR1 magic", () => {
    const body = fromHex(shared.hex);
    body[3] = 0x46; // "PVF1": a codec frame, not a reply
    expect(() => decodeReply(body.buffer as ArrayBuffer)).toThrow(/PVR1/);
  });

  it("sends only the browser->kernel traits on save_changes and applies the reply's traits", async () => {
    const sent: Array<{ path: string; body: unknown }> = [];
    const reply = fromHex(shared.hex);
    const fetcher: Fetcher = async (path, init) => {
      sent.push({ path, body: init?.body ? JSON.parse(String(init.body)) : null });
      return new Response(reply.slice().buffer as ArrayBuffer, { status: 200 });
    };
    const model = new HttpModel(new ProfviewClient(fetcher), "0123456789abcdef", { color_by: "category" });
    const changed: string[] = [];
    model.on("change:t0", () => changed.push("t0"));
    model.on("change:_overview", () => changed.push("_overview"));
    model.set("_view", { start: 0, end: 1 });
    model.set("color_by", "phase");
    model.save_changes();
    await new Promise((r) => setTimeout(r, 0));
    expect(sent).toEqual([{ path: "sessions/0123456789abcdef/traits", body: { color_by: "phase" } }]);
    expect(changed).toEqual(["t0", "_overview"]);
    expect(bytesOf(model.get("_overview"))).toEqual([1, 2, 3]);
    // invoke: one POST per command, the reply decoded
    const [msg, buffers] = await model.experimental.invoke<{ t0: number }>("_detail", { t0: 0, t1: 1, width: 10 });
    expect(sent[1]).toEqual({ path: "sessions/0123456789abcdef/call/_detail", body: { t0: 0, t1: 1, width: 10 } });
    expect(msg.t0).toBe(0.5);
    expect(buffers.length).toBe(2);
  });

  it("rejects with the server's JSON message (the ProfviewError text) on HTTP errors", async () => {
    const fetcher: Fetcher = async () =>
      new Response(JSON.stringify({ message: "bad.json: line 3: unexpected end (expected ']')" }), { status: 400 });
    await expect(new ProfviewClient(fetcher).state("0123456789abcdef")).rejects.toThrow("bad.json: line 3: unexpected end");
  });

  it("says when a run opened as one file, and the model keeps the final status", async () => {
    const base: SessionStatus = { id: "0123456789abcdef", name: "run", size: 10, state: "ready", elapsed: 0.1, error: "" };
    const oneFile: SessionStatus = {
      ...base, events: 483,
      run: { mode: "one-file", file: "rank-0.pt.trace.json.gz", files: 4, reason: "load_many needs pyarrow" },
    };
    expect(runNote(oneFile)).toBe("Showing only rank-0.pt.trace.json.gz (1 of 4 trace files), not all ranks " +
      "of the run: load_many needs pyarrow (pip install 'jupyter_profview[ranks]')");
    expect(runNote({ ...base, run: { mode: "ranks", ranks: [0, 1] } })).toBeNull();
    expect(runNote(base)).toBeNull();
    const reply = fromHex(shared.hex);
    const fetcher: Fetcher = async (path) => {
      if (path === "sessions") return new Response(JSON.stringify({ ...base, state: "loading" }), { status: 202 });
      if (path.endsWith("/state")) return new Response(reply.slice().buffer as ArrayBuffer, { status: 200 });
      return new Response(JSON.stringify(oneFile), { status: 200 });
    };
    const model = await openTrace(new ProfviewClient(fetcher), "run", () => {}, { pollMs: 5 });
    expect(model.status).toEqual(oneFile);
    model.dispose();
  });
});
