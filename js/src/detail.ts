// Detail on demand: the `_detail` round trips of one view. A view change asks (debounced) for the
// slices (and memory) of a window around the view at the screen's resolution, unless the last
// window sent still serves it; one request is in flight at a time and the newest waiting one wins.

import { decodeFrame } from "./codec";
import { slicesFromFrame } from "./lod";
import type { MemoryPanel } from "./memory";
import type { FrameProbe } from "./probe";
import { LatestWins, debounce, type Rpc, type StatusFn } from "./rpc";
import { detailCovers, detailRequest, type DetailRequest, type SliceSource } from "./source";
import type { Bounds, View } from "./viewport";

interface DetailJob extends DetailRequest { queued: number }
interface DetailReply { t0?: number; t1?: number; width?: number; kernel_ms?: number; kernel_at?: number }

/** What the loader needs of its view. */
export interface DetailHost {
  readonly rpc: Rpc;
  readonly memory: MemoryPanel;
  readonly source: SliceSource;
  readonly probe: FrameProbe;
  readonly view: View;
  readonly bounds: Bounds;
  readonly plotWidth: number;
  status: StatusFn;
  /** New boxes arrived: the drawn boxes must be prepared again. */
  detailArrived(): void;
  requestDraw(): void;
}

export class DetailLoader {
  /** The last `_detail` window sent (in flight or answered); null after a failure or a new overview. */
  private sent: DetailRequest | null = null;
  private force = false;
  private disposed = false;
  /** One `_detail` in flight at a time; a newer view replaces the one waiting (latest wins). */
  private queue = new LatestWins<DetailJob>((job) => this.send(job));
  /** Ask for the detail of the current view (debounced). */
  readonly fetch = debounce(() => this.enqueue(), 60);

  constructor(private host: DetailHost) {}

  /** The overview changed (e.g. recoloured): the old detail is gone, ask again for this view. */
  refetch(): void {
    this.sent = null;
    this.force = true;
    this.fetch();
  }

  dispose(): void {
    this.disposed = true;
    this.fetch.cancel();
    this.queue.dispose();
  }

  private enqueue(): void {
    const v = this.host;
    if (!v.rpc.available || this.disposed) return;
    const pw = v.plotWidth;
    const force = this.force;
    this.force = false;
    if (!force && this.sent && detailCovers(this.sent, v.view, v.bounds.min, v.bounds.max, pw)) {
      this.queue.clear(); // what is in flight (or drawn) serves this view: nothing to wait for
      return;
    }
    const req = detailRequest(v.view, v.bounds.min, v.bounds.max, pw);
    this.queue.request({ ...req, queued: performance.now() });
  }

  /** One round trip: the slices frame and (when the trace has memory data) the memory frame. */
  private async send(job: DetailJob): Promise<void> {
    const v = this.host;
    if (!v.rpc.available || this.disposed) return;
    const { t0, t1, width } = job;
    const memory = v.memory.hasData;
    const req = { t0, t1, width };
    this.sent = req;
    const sent = performance.now();
    const r = await v.rpc.call<DetailReply>("_detail", { t0, t1, width, memory }, "detail");
    const arrived = performance.now();
    if (this.disposed) return;
    if (!r) {
      if (this.sent === req) this.sent = null;
      v.probe.detail(arrived - sent); // failures count too (error reply or timeout)
      return;
    }
    const [slicesBuf, memBuf] = r.buffers;
    if (slicesBuf) {
      try {
        const d = slicesFromFrame(decodeFrame(slicesBuf));
        d.t0 = Number(r.msg.t0 ?? t0);
        d.t1 = Number(r.msg.t1 ?? t1);
        v.source.setDetail(d);
        v.detailArrived();
        v.status("");
      } catch (err) {
        v.status(`_detail: ${String(err)}`, "error");
      }
    }
    if (memory && memBuf) {
      try {
        v.memory.setDetail(decodeFrame(memBuf));
      } catch (err) {
        v.status(`_detail (memory): ${String(err)}`, "error");
      }
    }
    const done = performance.now();
    v.probe.detail(done - sent);
    v.probe.log({
      sent: performance.timeOrigin + sent, waited: sent - job.queued, arrived: arrived - sent, done: done - sent,
      bytes: slicesBuf?.byteLength ?? 0, memBytes: memBuf?.byteLength ?? 0,
      kernelMs: Number(r.msg.kernel_ms ?? NaN), kernelAt: Number(r.msg.kernel_at ?? NaN),
      stale: t0 <= v.view.start && t1 >= v.view.end ? 0 : 1,
    });
    v.requestDraw();
  }
}
