import { describe, expect, it } from "vitest";
import { HttpModel, ProfviewClient, decodeReply, type Fetcher } from "../src/transport_http";
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
});
