/**
 * Fleet config delivery's transports (seed 004): the control plane over HTTP ({@link HttpConfigSource}) and the
 * guest over its control framing ({@link FramingConfigPort}); the Runner itself is `core/agent_config/`.
 *
 * @module
 */
export { CONFIG_VERSION_HEADER, HttpConfigSource, type HttpConfigSourceOptions } from "./http_source.ts";
export { FramingConfigPort } from "./framing_port.ts";
