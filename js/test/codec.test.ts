import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame, FrameError, timeColumn } from "../src/codec";
import codecShared from "../../tests/shared_fixtures/codec_frame.json";

// Produced by jupyter_profview.codec.encode_frame(
//   {"x": np.array([1.5, -2.0]), "k": np.array([1, 2, 65535], np.uint16)}, {"a": 1, "labels": ["é"]})
const PY_GOLDEN_HEX =
  "50564631980000007b22636f6c756d6e73223a5b7b226e616d65223a2278222c226474797065223a22663634222c" +
  "226f6666736574223a3136302c226c656e677468223a327d2c7b226e616d65223a226b222c226474797065223a22" +
  "753136222c226f6666736574223a3137362c226c656e677468223a337d5d2c226d657461223a7b2261223a312c22" +
  "6c6162656c73223a5b22c3a9225d7d7d202020202020000000000000f83f00000000000000c001000200ffff0000";

const fromHex = (h: string): Uint8Array => Uint8Array.from(h.match(/../g) ?? [], (b) => parseInt(b, 16));

/** The same frame written byte by byte from the protocol text. */
function handWritten(): Uint8Array {
  const json =
    '{"columns":[{"name":"x","dtype":"f64","offset":160,"length":2},' +
    '{"name":"k","dtype":"u16","offset":176,"length":3}],"meta":{"a":1,"labels":["é"]}}';
  const jsonBytes = new TextEncoder().encode(json); // 146 bytes: "é" is 2 bytes in UTF-8
  const H = 152; // 8 + 152 = 160, a multiple of 8: 6 spaces of padding
  const out = new Uint8Array(184); // 160 + 2*8 (f64) = 176; + 3*2 (u16) = 182, padded to 184
  out.set([0x50, 0x56, 0x46, 0x31], 0); // "PVF1"
  const dv = new DataView(out.buffer);
  dv.setUint32(4, H, true);
  out.set(jsonBytes, 8);
  out.fill(0x20, 8 + jsonBytes.length, 8 + H);
  dv.setFloat64(160, 1.5, true);
  dv.setFloat64(168, -2.0, true);
  dv.setUint16(176, 1, true);
  dv.setUint16(178, 2, true);
  dv.setUint16(180, 65535, true);
  return out;
}

describe("codec", () => {
  it("the hand-written frame is exactly what the Python codec produces", () => {
    expect(Array.from(handWritten())).toEqual(Array.from(fromHex(PY_GOLDEN_HEX)));
  });

  it("decodes the golden frame", () => {
    const f = decodeFrame(fromHex(PY_GOLDEN_HEX));
    expect(f.length).toBe(2);
    expect(f.columns.x).toBeInstanceOf(Float64Array);
    expect(Array.from(f.columns.x)).toEqual([1.5, -2]);
    expect(f.columns.k).toBeInstanceOf(Uint16Array);
    expect(Array.from(f.columns.k)).toEqual([1, 2, 65535]);
    expect(f.meta).toEqual({ a: 1, labels: ["é"] });
  });

  it("encodes the same bytes as the Python codec", () => {
    const bytes = encodeFrame(
      { x: Float64Array.from([1.5, -2]), k: Uint16Array.from([1, 2, 65535]) },
      { a: 1, labels: ["é"] },
    );
    expect(Array.from(bytes)).toEqual(Array.from(fromHex(PY_GOLDEN_HEX)));
  });

  it("roundtrips every dtype", () => {
    const cols = {
      f64: Float64Array.from([0.1, -1e300, Infinity]),
      f32: Float32Array.from([0.5, -2.25]),
      i32: Int32Array.from([-1, 2147483647, -2147483648]),
      u32: Uint32Array.from([0, 4294967295]),
      i16: Int16Array.from([-32768, 32767]),
      u16: Uint16Array.from([65535]),
      i8: Int8Array.from([-128, 127, 0]),
      u8: Uint8Array.from([255, 1, 2, 3, 4]),
    };
    const f = decodeFrame(encodeFrame(cols, { t0: 0, labels: ["a", "b"] }));
    for (const [name, col] of Object.entries(cols)) {
      expect(f.columns[name].constructor).toBe(col.constructor);
      expect(Array.from(f.columns[name])).toEqual(Array.from(col));
    }
    expect(f.meta).toEqual({ t0: 0, labels: ["a", "b"] });
  });

  it("every column starts 8-byte aligned from byte 0", () => {
    const bytes = encodeFrame({ a: Uint8Array.from([1, 2, 3]), b: Float64Array.from([7]), c: Int16Array.from([5]) });
    const H = new DataView(bytes.buffer).getUint32(4, true);
    expect((8 + H) % 8).toBe(0);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + H)));
    for (const c of header.columns) expect(c.offset % 8).toBe(0);
    expect(header.columns[0].offset).toBe(8 + H);
  });

  it("decodes a frame at an unaligned byteOffset inside a larger buffer (DataView)", () => {
    const frame = fromHex(PY_GOLDEN_HEX);
    const big = new ArrayBuffer(frame.length + 11);
    new Uint8Array(big).set(frame, 3);
    const f = decodeFrame(new DataView(big, 3, frame.length));
    expect(Array.from(f.columns.x)).toEqual([1.5, -2]);
    expect(Array.from(f.columns.k)).toEqual([1, 2, 65535]);
    expect(f.columns.x.byteOffset % 8).toBe(0);
  });

  it("decodes in place (no copy) when the byteOffset keeps the columns aligned", () => {
    const frame = fromHex(PY_GOLDEN_HEX);
    const big = new ArrayBuffer(frame.length + 16);
    new Uint8Array(big).set(frame, 8);
    const f = decodeFrame(new Uint8Array(big, 8, frame.length));
    expect(f.columns.x.buffer).toBe(big);
    expect(f.columns.x.byteOffset).toBe(8 + 160);
  });

  it("an empty bytes trait is an empty frame; bad magic and overruns fail with a FrameError", () => {
    expect(decodeFrame(new DataView(new ArrayBuffer(0))).length).toBe(0);
    expect(decodeFrame(null).columns).toEqual({});
    const bad = fromHex(PY_GOLDEN_HEX);
    bad[0] = 0x51;
    expect(() => decodeFrame(bad)).toThrow(FrameError);
    const short = fromHex(PY_GOLDEN_HEX).slice(0, 170);
    expect(() => decodeFrame(short)).toThrow(/run past the frame/);
  });

  it("time columns: f32 relative to meta.origin (detail replies) or f64 as is (overview)", () => {
    const origin = 43_233_769_564; // too big for f32 as an absolute ns time
    const rel = Float32Array.from([0, 1.5, 12345.25, 9_999_999]);
    const f = decodeFrame(encodeFrame({ t: rel }, { origin }));
    const t = timeColumn(f, "t");
    expect(t).toBeInstanceOf(Float64Array);
    expect(Array.from(t ?? [])).toEqual(Array.from(rel, (x) => x + origin));
    const abs = Float64Array.from([1, 2, 3]);
    const g = decodeFrame(encodeFrame({ t: abs }));
    expect(timeColumn(g, "t")).toBe(g.columns.t); // no origin, f64: the view itself, no copy
    expect(timeColumn(g, "missing")).toBeNull();
  });
});

// A frame encoded by the Python codec, committed; tests/test_codec.py decodes the same bytes.
interface SharedFrame { hex: string; dtypes: Record<string, string>; columns: Record<string, Array<number | string>>; absolute_start: number[]; meta: Record<string, unknown> }
const shared = codecShared as unknown as SharedFrame;
const CTORS: Record<string, { new (a: ArrayLike<number>): ArrayLike<number> }> = {
  f64: Float64Array, f32: Float32Array, i32: Int32Array, u32: Uint32Array,
  i16: Int16Array, u16: Uint16Array, i8: Int8Array, u8: Uint8Array,
};
const values = (v: Array<number | string>): number[] => v.map(Number); // "Infinity"

describe("codec: the frame shared with pytest", () => {
  it("decodes the Python-encoded bytes into the fixture's columns and meta", () => {
    const f = decodeFrame(fromHex(shared.hex));
    expect(f.meta).toEqual(shared.meta);
    expect(Object.keys(f.columns)).toEqual(Object.keys(shared.columns));
    for (const [name, want] of Object.entries(shared.columns)) {
      expect(f.columns[name].constructor).toBe(CTORS[shared.dtypes[name]]);
      expect(Array.from(f.columns[name])).toEqual(values(want));
    }
    expect(Array.from(timeColumn(f, "start") ?? [])).toEqual(shared.absolute_start);
  });

  it("the TS encoder writes the same bytes", () => {
    const cols = Object.fromEntries(Object.entries(shared.columns).map(
      ([name, v]) => [name, new CTORS[shared.dtypes[name]](values(v))]));
    const bytes = encodeFrame(cols as Parameters<typeof encodeFrame>[0], shared.meta);
    expect(Array.from(bytes)).toEqual(Array.from(fromHex(shared.hex)));
  });
});
