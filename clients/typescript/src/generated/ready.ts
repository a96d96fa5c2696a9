// GENERATED from docs/ready.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * The one line `stockade serve` prints on stdout once the server answers on its port (serve/serve_command.cpp).
 */
export interface ReadyRecord {
  schema: "stockade.ready/v1";
  event: "ready";
  name: string;
  port: number;
  /**
   * the supervisor's pid: `stockade stop NAME` or SIGTERM to it ends the server
   */
  pid: number;
  /**
   * how the port reaches the server; direct (asked for, or the default `auto`) may be `userspace`, and `backend_fallback` says why
   */
  backend: "userspace" | "direct" | "veth";
  /**
   * why the backend asked for (direct, by name or as the default) is not the one serving; null when it is
   */
  backend_fallback?: string | null;
  /**
   * the host loopbacks the userspace forwarder serves: both under userspace and veth; under direct, those whose listener the server does not hold (a server on [::1] alone: ["127.0.0.1"], carried to it)
   */
  forwarded_loopbacks?: ("127.0.0.1" | "::1")[];
  /**
   * from the start of `serve` to ready
   */
  elapsed_ms: number;
}

export const readySchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:ready:v1",
  "title": "stockade dev server ready event",
  "description": "The one line `stockade serve` prints on stdout once the server answers on its port (serve/serve_command.cpp).",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "schema",
    "event",
    "name",
    "port",
    "pid",
    "backend",
    "elapsed_ms"
  ],
  "properties": {
    "schema": {
      "const": "stockade.ready/v1"
    },
    "event": {
      "const": "ready"
    },
    "name": {
      "type": "string",
      "minLength": 1
    },
    "port": {
      "type": "integer",
      "minimum": 1,
      "maximum": 65535
    },
    "pid": {
      "type": "integer",
      "minimum": 1,
      "description": "the supervisor's pid: `stockade stop NAME` or SIGTERM to it ends the server"
    },
    "backend": {
      "enum": [
        "userspace",
        "direct",
        "veth"
      ],
      "description": "how the port reaches the server; direct (asked for, or the default `auto`) may be `userspace`, and `backend_fallback` says why"
    },
    "backend_fallback": {
      "type": [
        "string",
        "null"
      ],
      "description": "why the backend asked for (direct, by name or as the default) is not the one serving; null when it is"
    },
    "forwarded_loopbacks": {
      "type": "array",
      "items": {
        "enum": [
          "127.0.0.1",
          "::1"
        ]
      },
      "uniqueItems": true,
      "description": "the host loopbacks the userspace forwarder serves: both under userspace and veth; under direct, those whose listener the server does not hold (a server on [::1] alone: [\"127.0.0.1\"], carried to it)"
    },
    "elapsed_ms": {
      "type": "integer",
      "minimum": 0,
      "description": "from the start of `serve` to ready"
    }
  }
} as const;
