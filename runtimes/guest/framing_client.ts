/**
 * `host::Client`: the host program's client of the guest agent over the control framing (seed 002 §Host
 * program). It sends messages, receives the guest's across any chunking, and runs requests (ping, echo, stop,
 * configureRoot, probe, installAgentConfig) and execution peers. A failure of the stream, a send that fails or
 * times out, a malformed message, an answer that does not decode or of another kind, and a request whose answer
 * is late end the client for good; a receive that times out keeps what arrived.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import {
  ATTACH_NONCE_BYTES,
  AUTH_CHALLENGE_BYTES,
  CAPABILITY_REFUSED,
  checkOutgoing,
  decodeFacts,
  decodeGuestMessage,
  decodeInstallResult,
  decodeNoncePair,
  decodeProblem,
  Decoder,
  decodeReady,
  decodeRootFailure,
  encodeFrame,
  encodeHostMessage,
  encodeProbe,
  encodeRootConfig,
  encodeVersion,
  type ExecKey,
  type ExecStart,
  type Facts,
  frameParts,
  FramingError,
  framingProof,
  type HostMessage,
  type InstallResult,
  isExecKind,
  Kind,
  MAX_CONFIG_CHUNK,
  type Probe,
  type RootConfig,
  type RootFailure,
  verifyFramingProof,
} from "../../core/framing/mod.ts";
import { MAX_WIRE_BYTES } from "../../core/images/mod.ts";
import type { ByteConn } from "./framing_conn.ts";
import { ClientEnded, type ClientEndReason, ReceiveTimeout } from "./framing_errors.ts";
import { ExecPeer, type OutputSink } from "./exec_peer.ts";
import { settled } from "../../core/settled.ts";

/** A message of the guest, with a body of its own. */
export interface Message {
  readonly kind: number;
  readonly body: Uint8Array;
}

/** Options of {@link FramingClient.attach}. */
export interface ClientOptions {
  /** How long a request waits for its answer (30 s). */
  readonly requestTimeoutMs?: number;
  /** How long a send may take (30 s). */
  readonly sendTimeoutMs?: number;
  /** Attach in a new epoch: send an Echo of a nonce and drop every byte before its answer (see framing mod.ts). */
  readonly sync?: boolean;
  /** The read size (64 KiB). */
  readonly readSize?: number;
  /**
   * Attach by proving the VM's secret (the launch capability, which is also its channel key; `core/framing/attach.ts`):
   * the first message of the epoch is Attach, and its answer, found by search, also stands for the sync Echo. A
   * guest that does not prove the secret back ends the client (`auth`); a guest that refuses the host's proof ends it
   * (`refused`, naming `capability-refused`).
   */
  readonly channelKey?: Uint8Array;
}

/** How the guest answered a root configuration. */
export type RootAnswer = { readonly ready: string } | { readonly failed: RootFailure };
/** How the guest answered a probe. */
export type ProbeAnswer = { readonly facts: Facts } | { readonly problem: string };

/** Thrown by {@link FramingClient.installAgentConfig} when the guest answers with another code than ok. */
export class InstallRefused extends Error {
  override name = "InstallRefused";
  constructor(readonly result: InstallResult) {
    super(`the guest refused the install (${result.code}): ${result.problem}`);
  }
}

/** The host-side check that refuses a bundle beyond the wire cap before the push. */
export class BundleTooLarge extends Error {
  override name = "BundleTooLarge";
}

function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, rej) => timer = setTimeout(() => rej(onTimeout()), ms));
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** memcmp through node:buffer (a JS loop costs ~450 µs at 256 KiB, this ~13 µs). */
function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length &&
    Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));
}

/** The host program's client of one attachment. */
export class FramingClient {
  readonly #conn: ByteConn;
  readonly #dec = new Decoder({ from: "guest" });
  readonly #inbox: Message[] = [];
  #waiter: (() => void) | null = null;
  #ended: ClientEnded | null = null;
  readonly #peers = new Map<bigint, ExecPeer>();
  readonly #requestMs: number;
  readonly #sendMs: number;
  readonly #readSize: number;
  #sending: Promise<void> = Promise.resolve();
  /** The 21-byte messages, any of which ends the sync (the sync Echo, or Attach's answers), while syncing. */
  #syncMarks: Uint8Array[] | null = null;
  #syncTail = new Uint8Array(0);
  /** Resolves once the read loop ends. */
  readonly done: Promise<void>;

  private constructor(conn: ByteConn, opts: ClientOptions) {
    this.#conn = conn;
    this.#requestMs = opts.requestTimeoutMs ?? 30_000;
    this.#sendMs = opts.sendTimeoutMs ?? 30_000;
    this.#readSize = opts.readSize ?? 64 * 1024;
    this.done = this.#readLoop();
  }

  /**
   * Attaches over `conn`: with a `channelKey`, runs the channel gate's handshake in a new epoch (see
   * {@link ClientOptions.channelKey}); else, with `sync`, first finds the message boundary of a new epoch with an Echo.
   */
  static async attach(conn: ByteConn, opts: ClientOptions = {}): Promise<FramingClient> {
    const c = new FramingClient(conn, { ...opts });
    const nonce = crypto.getRandomValues(new Uint8Array(ATTACH_NONCE_BYTES));
    if (opts.channelKey !== undefined) {
      await c.#handshake(opts.channelKey, nonce);
    } else if (opts.sync) {
      c.#syncMarks = [encodeFrame(Kind.Echo, nonce)];
      await c.#request(Kind.Echo, nonce, [Kind.Echo], "sync");
    }
    return c;
  }

  async #handshake(key: Uint8Array, nonce: Uint8Array): Promise<void> {
    const challenge = encodeFrame(Kind.AuthChallenge, new Uint8Array(AUTH_CHALLENGE_BYTES)).slice(0, 5 + nonce.length);
    challenge.set(nonce, 5);
    this.#syncMarks = [challenge, encodeFrame(Kind.Attached, nonce), encodeFrame(Kind.AttachRefused, nonce)];
    const refused = () => this.end("refused", `the guest refused the launch capability (${CAPABILITY_REFUSED})`);
    const first = [Kind.AuthChallenge, Kind.Attached, Kind.AttachRefused];
    const m = await this.#request(Kind.Attach, nonce, first, "attach");
    if (m.kind === Kind.AttachRefused) throw refused();
    if (m.kind === Kind.Attached) throw this.end("auth", "the guest holds no secret: it cannot prove the channel key");
    const ch = this.#decode("AuthChallenge", () => decodeNoncePair("auth-challenge", m.body));
    if (!bytesEqual(ch.nonce, nonce)) throw this.end("unexpected", "the AuthChallenge answers another Attach");
    const proof = framingProof(key, "host", nonce, ch.second);
    const done = await this.#request(Kind.AuthProof, proof, [Kind.Attached, Kind.AttachRefused], "proof");
    if (done.kind === Kind.AttachRefused) throw refused();
    const ok = this.#decode("Attached", () => decodeNoncePair("attached", done.body));
    if (!bytesEqual(ok.nonce, nonce) || !verifyFramingProof(key, "guest", nonce, ch.second, ok.second)) {
      throw this.end("auth", "the guest's Attached does not prove the channel key");
    }
  }

  /** Whether the client ended, and why. */
  get ended(): ClientEnded | null {
    return this.#ended;
  }

  /** Ends the client with `reason`; idempotent. Every peer's pending promises fail. */
  end(reason: ClientEndReason, message: string, cause?: unknown): ClientEnded {
    if (this.#ended) return this.#ended;
    this.#ended = new ClientEnded(reason, message, { cause });
    for (const p of this.#peers.values()) p.fail(this.#ended);
    this.#peers.clear();
    this.#conn.close();
    this.#wake();
    return this.#ended;
  }

  /** Closes the client. */
  close(): void {
    this.end("closed", "closed by the caller");
  }

  #wake(): void {
    const w = this.#waiter;
    this.#waiter = null;
    w?.();
  }

  async #readLoop(): Promise<void> {
    // One read buffer for the client's life: the decoder copies what it holds across reads, and every message is
    // copied out (or decoded) before the next read.
    const buf = new Uint8Array(this.#readSize);
    try {
      for (;;) {
        const n = await this.#conn.read(buf);
        if (this.#ended) return;
        if (n === null) {
          this.#dec.finish();
          this.end("session", "the guest closed the stream");
          return;
        }
        let chunk: Uint8Array = buf.subarray(0, n);
        if (this.#syncMarks) {
          const rest = this.#findSync(chunk);
          if (rest === null) continue;
          chunk = rest;
        }
        this.#dec.feed(chunk);
        for (let f = this.#dec.next(); f !== null; f = this.#dec.next()) this.#dispatch(f.kind, f.body);
      }
    } catch (e) {
      if (this.#ended) return;
      if (e instanceof FramingError) this.end("malformed", e.message, e);
      else if (e instanceof ClientEnded) return;
      else this.end("session", e instanceof Error ? e.message : String(e), e);
    }
  }

  /** Drops bytes until a sync mark; returns the stream from the mark on, or null while none has arrived. */
  #findSync(chunk: Uint8Array): Uint8Array | null {
    const marks = this.#syncMarks!;
    const len = marks[0]!.length;
    const hay = new Uint8Array(this.#syncTail.length + chunk.length);
    hay.set(this.#syncTail);
    hay.set(chunk, this.#syncTail.length);
    for (let i = 0; i + len <= hay.length; i++) {
      const mark = marks.find((m) => hay[i] === m[0] && bytesEqual(hay.subarray(i, i + len), m));
      if (mark === undefined) continue;
      this.#syncMarks = null;
      this.#syncTail = new Uint8Array(0);
      return hay.subarray(i); // the mark is a message's header and its body's start: the decoder takes it whole
    }
    this.#syncTail = hay.slice(Math.max(0, hay.length - len + 1));
    return null;
  }

  #dispatch(kind: number, body: Uint8Array): void {
    if (isExecKind(kind)) {
      let m;
      try {
        m = decodeGuestMessage(kind, body);
      } catch (e) {
        throw this.end("undecodable", `an execution message of kind ${kind} does not decode`, e);
      }
      const peer = this.#peers.get(m.key.id);
      if (peer === undefined || peer.key.generation !== m.key.generation) return; // late or stale
      const problem = peer.take(m);
      if (problem !== null) throw this.end("credit", problem);
      if (m.type === "terminal") this.#peers.delete(m.key.id);
      return;
    }
    this.#inbox.push({ kind, body: body.slice() });
    this.#wake();
  }

  /** Sends one message; refuses (without ending) a message beyond its kind's limit. */
  send(kind: number, body: Uint8Array = new Uint8Array(0)): Promise<void> {
    if (this.#ended) return Promise.reject(this.#ended);
    const parts = frameParts(kind, body); // throws FramingError for a message the framing refuses
    const p = this.#sending.then(() => {
      if (this.#ended) throw this.#ended;
      return withTimeout(
        (async () => {
          for (const part of parts) {
            let o = 0;
            while (o < part.length) o += await this.#conn.write(part.subarray(o));
          }
        })(),
        this.#sendMs,
        () => this.end("send", `a send of kind ${kind} timed out after ${this.#sendMs} ms`),
      );
    }).catch((e) => {
      throw e instanceof ClientEnded ? e : this.end("send", e instanceof Error ? e.message : String(e), e);
    });
    this.#sending = settled(p);
    return p;
  }

  /** The guest's next message that is not about an execution; a timeout throws {@link ReceiveTimeout}. */
  async receive(timeoutMs = this.#requestMs): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.#inbox.shift();
      if (m !== undefined) return m;
      if (this.#ended) throw this.#ended;
      const left = deadline - Date.now();
      if (left <= 0) throw new ReceiveTimeout(`no message within ${timeoutMs} ms`);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((res) => {
        this.#waiter = res;
        timer = setTimeout(() => {
          if (this.#waiter === res) this.#waiter = null;
          res();
        }, left);
      });
      clearTimeout(timer);
    }
  }

  /** Sends a request and returns its answer; any failure after the framing accepted it ends the client. */
  async #request(kind: number, body: Uint8Array, answers: readonly number[], what: string): Promise<Message> {
    checkOutgoing(kind, body.length); // a message the framing refuses throws before anything is sent
    try {
      await this.send(kind, body);
      const m = await this.receive(this.#requestMs);
      if (!answers.includes(m.kind)) throw this.end("unexpected", `${what} was answered with kind ${m.kind}`);
      return m;
    } catch (e) {
      if (e instanceof ReceiveTimeout) throw this.end("late", `${what} got no answer within ${this.#requestMs} ms`);
      if (e instanceof ClientEnded) throw e;
      throw this.end("session", e instanceof Error ? e.message : String(e), e);
    }
  }

  #decode<T>(what: string, f: () => T): T {
    try {
      return f();
    } catch (e) {
      throw this.end("undecodable", `${what} does not decode`, e);
    }
  }

  /** Ping → Pong. */
  async ping(): Promise<void> {
    await this.#request(Kind.Ping, new Uint8Array(0), [Kind.Pong], "ping");
  }

  /** Echo → an Echo of the same bytes. */
  async echo(bytes: Uint8Array): Promise<void> {
    const m = await this.#request(Kind.Echo, bytes, [Kind.Echo], "echo");
    if (!bytesEqual(m.body, bytes)) throw this.end("unexpected", "the echo came back different");
  }

  /** Stop → Stopped; returns the failure of a layered root's teardown that the guest reported first, if any. */
  async stop(): Promise<RootFailure | null> {
    const m = await this.#request(Kind.Stop, new Uint8Array(0), [Kind.Stopped, Kind.RootFailed], "stop");
    if (m.kind === Kind.Stopped) return null;
    const failure = this.#decode("RootFailed", () => decodeRootFailure(m.body));
    const next = await this.receive(this.#requestMs).catch((e) => {
      throw e instanceof ReceiveTimeout ? this.end("late", "Stopped did not follow RootFailed") : e;
    });
    if (next.kind !== Kind.Stopped) throw this.end("unexpected", `stop was answered with kind ${next.kind}`);
    return failure;
  }

  /** Sends a root configuration; returns Ready's build or the failed stage. */
  async configureRoot(config: RootConfig): Promise<RootAnswer> {
    const m = await this.#request(Kind.RootConfig, encodeRootConfig(config), [Kind.Ready, Kind.RootFailed], "root");
    if (m.kind === Kind.Ready) return { ready: this.#decode("Ready", () => decodeReady(m.body)) };
    return { failed: this.#decode("RootFailed", () => decodeRootFailure(m.body)) };
  }

  /** Runs a probe; returns its facts or the problem. */
  async probe(probe: Probe): Promise<ProbeAnswer> {
    const m = await this.#request(Kind.Probe, encodeProbe(probe), [Kind.Report, Kind.ProbeFailed], "probe");
    if (m.kind === Kind.Report) return { facts: this.#decode("Report", () => decodeFacts(m.body)) };
    return { problem: this.#decode("ProbeFailed", () => decodeProblem(m.body)) };
  }

  /**
   * Installs an agent config bundle (seed 004): checks the wire cap before the push, skips the push when
   * `ifVersion` already names `version`, then sends the version frame, 512 KiB chunks and the end frame.
   * Returns whether it pushed; throws {@link InstallRefused} on another code than ok.
   */
  async installAgentConfig(
    version: string,
    tarball: Uint8Array,
    opts: { ifVersion?: string; maxWireBytes?: number } = {},
  ): Promise<boolean> {
    if (opts.ifVersion !== undefined && opts.ifVersion === version) return false;
    const cap = opts.maxWireBytes ?? MAX_WIRE_BYTES;
    if (tarball.length > cap) throw new BundleTooLarge(`the bundle holds ${tarball.length} bytes, beyond ${cap}`);
    await this.send(Kind.AgentConfigVersion, encodeVersion(version));
    for (let o = 0; o < tarball.length; o += MAX_CONFIG_CHUNK) {
      await this.send(Kind.AgentConfigChunk, tarball.subarray(o, o + MAX_CONFIG_CHUNK));
    }
    const m = await this.#request(Kind.AgentConfigEnd, new Uint8Array(0), [Kind.AgentConfigResult], "install");
    const result = this.#decode("AgentConfigResult", () => decodeInstallResult(m.body));
    if (result.code !== "ok") throw new InstallRefused(result);
    return true;
  }

  /**
   * Starts an execution; its peer carries its streams, credit and outcome. With `send: false` the caller sends
   * the start itself (such as in one write with the root configuration) and the peer only takes its messages.
   */
  async execute(key: ExecKey, start: ExecStart, sink: OutputSink, opts: { send?: boolean } = {}): Promise<ExecPeer> {
    if (this.#ended) throw this.#ended;
    const old = this.#peers.get(key.id);
    if (old) old.abandon();
    const peer = new ExecPeer(key, start, sink, (m) => this.#sendHost(m));
    this.#peers.set(key.id, peer);
    if (opts.send !== false) await peer.sendStart();
    return peer;
  }

  #sendHost(m: HostMessage): Promise<void> {
    const { kind, body } = encodeHostMessage(m);
    return this.send(kind, body);
  }
}
