// The second transport of the view: the same `model` (get/set/on/off/save_changes) and
// `experimental.invoke` that anywidget gives the notebook widget, backed by the HTTP API of the
// jupyter-server extension (jupyter_profview/server/handlers.py) instead of a kernel comm.
// Used by the JupyterLab document (labextension/) and by `profview serve` (standalone.ts).

import type { AnyModel, Experimental } from "@anywidget/types";
import { formatBytes } from "./axis";
import { SESSION_TRAITS } from "./traits";

/** Fetch `path` under `{base_url}profview/api/` with the server's auth (token / XSRF). */
export type Fetcher = (path: string, init?: RequestInit) => Promise<Response>;

/** What a run directory opened as (server/worker.py `_load_directory`): all ranks with
 * `load_many`, or one of its files when the `ranks` extra is missing. */
export type RunInfo =
  | { mode: "ranks"; ranks: number[] }
  | { mode: "one-file"; file: string; files: number; reason: string };

export interface SessionStatus {
  id: string; name: string; size: number; state: "loading" | "ready" | "error";
  elapsed: number; error: string; events?: number; run?: RunInfo;
}

export class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = "HttpError";
  }
}

const MAGIC = [0x50, 0x56, 0x52, 0x31]; // "PVR1" (server/wire.py)

/** Decode a framed reply: the JSON message, its buffers, and `{"$buffer": i}` values as DataViews. */
export function decodeReply(body: ArrayBuffer): { msg: Record<string, unknown>; buffers: DataView[] } {
  const bytes = new Uint8Array(body);
  if (bytes.byteLength < 8 || MAGIC.some((m, i) => bytes[i] !== m)) {
    throw new Error("not a profview reply (expected \"PVR1\" at byte 0)");
  }
  const hlen = new DataView(body, 0, 8).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + hlen))) as {
    msg: Record<string, unknown>; buffers: Array<[number, number]>;
  };
  const buffers = header.buffers.map(([offset, length]) => {
    if (offset + length > body.byteLength) throw new Error(`reply buffer ${offset}+${length} runs past the body`);
    return new DataView(body, offset, length);
  });
  const msg: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(header.msg ?? {})) {
    const ref = value as { $buffer?: unknown } | null;
    msg[key] = ref && typeof ref === "object" && typeof ref.$buffer === "number" && Object.keys(ref).length === 1
      ? buffers[ref.$buffer] : value;
  }
  return { msg, buffers };
}

async function errorOf(r: Response): Promise<HttpError> {
  let text = r.statusText;
  try {
    const body = (await r.json()) as { message?: string };
    if (body && typeof body.message === "string" && body.message) text = body.message;
  } catch {
    // not JSON: keep the status text
  }
  return new HttpError(r.status, text || `HTTP ${r.status}`);
}

/** The session API of one server. */
export class ProfviewClient {
  constructor(private fetcher: Fetcher) {}

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const r = await this.fetcher(path, init);
    if (!r.ok) throw await errorOf(r);
    return r;
  }

  private static json(method: string, body: unknown, signal?: AbortSignal): RequestInit {
    return { method, body: JSON.stringify(body ?? null), headers: { "Content-Type": "application/json" }, signal };
  }

  async open(path: string): Promise<SessionStatus> {
    return (await (await this.request("sessions", ProfviewClient.json("POST", { path }))).json()) as SessionStatus;
  }

  async status(sid: string): Promise<SessionStatus> {
    return (await (await this.request(`sessions/${sid}`)).json()) as SessionStatus;
  }

  async state(sid: string): Promise<Record<string, unknown>> {
    return decodeReply(await (await this.request(`sessions/${sid}/state`)).arrayBuffer()).msg;
  }

  async call(sid: string, name: string, msg: unknown, signal?: AbortSignal): Promise<[unknown, DataView[]]> {
    const r = await this.request(`sessions/${sid}/call/${name}`, ProfviewClient.json("POST", msg ?? {}, signal));
    const reply = decodeReply(await r.arrayBuffer());
    return [reply.msg, reply.buffers];
  }

  async setTraits(sid: string, changes: Record<string, unknown>): Promise<Record<string, unknown>> {
    const r = await this.request(`sessions/${sid}/traits`, ProfviewClient.json("POST", changes));
    return decodeReply(await r.arrayBuffer()).msg;
  }

  async close(sid: string): Promise<void> {
    await this.fetcher(`sessions/${sid}`, { method: "DELETE", keepalive: true });
  }
}

// the handler type of AnyModel.on (change callbacks and msg:custom share it)
type Handler = (...args: any[]) => void;


/** An anywidget-style model whose state lives in a server session. */
export class HttpModel implements AnyModel {
  private values: Record<string, unknown>;
  private dirty = new Set<string>();
  private handlers = new Map<string, Set<Handler>>();
  private disposed = false;
  readonly widget_manager = {
    get_model: (): Promise<never> => Promise.reject(new Error("no widget manager outside a notebook")),
  };

  constructor(
    private client: ProfviewClient,
    readonly sid: string,
    state: Record<string, unknown>,
    private onError: (text: string) => void = () => {},
    /** the session's status once loaded (what was loaded: `run` for a directory) */
    readonly status: SessionStatus | null = null,
  ) {
    this.values = { ...state };
  }

  get(key: string): never {
    return this.values[key] as never;
  }

  set(key: string, value: unknown): void {
    this.values[key] = value;
    this.dirty.add(key);
    this.emit(`change:${key}`);
  }

  save_changes(): void {
    const changes: Record<string, unknown> = {};
    for (const key of this.dirty) if (SESSION_TRAITS.has(key)) changes[key] = this.values[key];
    this.dirty.clear();
    if (!Object.keys(changes).length || this.disposed) return;
    this.client.setTraits(this.sid, changes).then((reply) => {
      if (this.disposed) return;
      if (typeof reply.error === "string") {
        this.onError(reply.error);
        return;
      }
      for (const [key, value] of Object.entries(reply)) {
        this.values[key] = value;
        this.emit(`change:${key}`);
      }
    }, (err: unknown) => this.onError(String(err instanceof Error ? err.message : err)));
  }

  on(eventName: string, callback: Handler): void {
    let set = this.handlers.get(eventName);
    if (!set) this.handlers.set(eventName, (set = new Set()));
    set.add(callback);
  }

  off(eventName?: string | null, callback?: Handler | null): void {
    if (!eventName) this.handlers.clear();
    else if (!callback) this.handlers.delete(eventName);
    else this.handlers.get(eventName)?.delete(callback);
  }

  send(): void {
    // no custom messages over HTTP: commands go through `invoke`
  }

  private emit(eventName: string): void {
    for (const cb of [...(this.handlers.get(eventName) ?? [])]) cb();
  }

  /** anywidget's `experimental.invoke`, as a POST per command. */
  readonly experimental: Experimental = {
    invoke: async <T>(name: string, msg?: unknown, options?: { signal?: AbortSignal }): Promise<[T, DataView[]]> => {
      const [reply, buffers] = await this.client.call(this.sid, name, msg, options?.signal);
      return [reply as T, buffers];
    },
  };

  /** Close the server session (the trace leaves the worker's cache). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.handlers.clear();
    void this.client.close(this.sid).catch(() => {});
  }
}

/** "Loading x.json (12.3 MiB)… 2.1 s" (the size by the shared byte rule; seconds so far, one decimal) */
export function progressText(s: SessionStatus): string {
  return `Loading ${s.name} (${formatBytes(s.size)})… ${s.elapsed.toFixed(1)} s`;
}

/** The line a tab shows when a run directory opened as one file (the `ranks` extra is missing);
 * null when everything asked for was loaded. */
export function runNote(s: SessionStatus | null | undefined): string | null {
  const run = s?.run;
  if (!run || run.mode !== "one-file") return null;
  const of = run.files > 1 ? ` (1 of ${run.files} trace files)` : "";
  const hint = /pip install/.test(run.reason) ? "" : " (pip install 'jupyter_profview[ranks]')";
  return `Showing only ${run.file}${of}, not all ranks of the run: ${run.reason}${hint}`;
}

/**
 * Open `path` (relative to the server root) and wait for it to load, reporting progress every
 * `pollMs`. Resolves to the model; rejects with the server's message (the ProfviewError text for a
 * bad trace) as an HttpError.
 */
export async function openTrace(
  client: ProfviewClient, path: string, onProgress: (s: SessionStatus) => void,
  options: { pollMs?: number; signal?: AbortSignal; onError?: (text: string) => void } = {},
): Promise<HttpModel> {
  const opened = await client.open(path);
  onProgress(opened);
  let done = false;
  const poll = async (): Promise<void> => {
    while (!done && !options.signal?.aborted) {
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
      if (done) return;
      try {
        const s = await client.status(opened.id);
        if (!done && s.state === "loading") onProgress(s);
      } catch {
        return;
      }
    }
  };
  void poll();
  try {
    const state = await client.state(opened.id);
    const status = options.signal?.aborted ? null : await client.status(opened.id);
    if (options.signal?.aborted) {
      void client.close(opened.id);
      throw new Error("aborted");
    }
    return new HttpModel(client, opened.id, state, options.onError, status);
  } catch (err) {
    void client.close(opened.id).catch(() => {});
    throw err;
  } finally {
    done = true;
  }
}
