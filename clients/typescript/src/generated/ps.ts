// GENERATED from docs/ps.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * The caller's running dev servers: `stockade ps --json` (serve/serve_command.cpp), an object naming this schema with one entry per server in `servers`, whatever its state; each entry names the schema too.
 */
export interface PsRecord {
  schema: "stockade.ps/v1";
  servers: Server[];
}
export interface Server {
  schema: "stockade.ps/v1";
  name: string;
  /**
   * the published port on the host's loopback
   */
  port: number;
  /**
   * the supervisor's pid
   */
  pid: number;
  /**
   * the sandbox's init, as the host sees it; 0 before it started
   */
  sandbox_pid: number;
  ready: boolean;
  uptime_s: number;
  profile: string;
  command: string[];
  /**
   * how the port reaches the server, as in the ready event; empty until ready
   */
  backend: "" | "userspace" | "direct" | "veth";
  /**
   * as in the ready event: why direct is not the backend serving; null when it is, or before ready
   */
  backend_fallback?: string | null;
  /**
   * as in the ready event: the host loopbacks the forwarder serves; empty before ready
   */
  forwarded_loopbacks?: ("127.0.0.1" | "::1")[];
  /**
   * the server's log file
   */
  log: string;
}

export const psSchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:ps:v1",
  "title": "stockade dev servers",
  "description": "The caller's running dev servers: `stockade ps --json` (serve/serve_command.cpp), an object naming this schema with one entry per server in `servers`, whatever its state; each entry names the schema too.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "schema",
    "servers"
  ],
  "properties": {
    "schema": {
      "const": "stockade.ps/v1"
    },
    "servers": {
      "type": "array",
      "items": {
        "$ref": "#/$defs/server"
      }
    }
  },
  "$defs": {
    "server": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "schema",
        "name",
        "port",
        "pid",
        "sandbox_pid",
        "ready",
        "uptime_s",
        "profile",
        "command",
        "backend",
        "log"
      ],
      "properties": {
        "schema": {
          "const": "stockade.ps/v1"
        },
        "name": {
          "type": "string",
          "minLength": 1
        },
        "port": {
          "type": "integer",
          "minimum": 1,
          "maximum": 65535,
          "description": "the published port on the host's loopback"
        },
        "pid": {
          "type": "integer",
          "minimum": 0,
          "description": "the supervisor's pid"
        },
        "sandbox_pid": {
          "type": "integer",
          "minimum": 0,
          "description": "the sandbox's init, as the host sees it; 0 before it started"
        },
        "ready": {
          "type": "boolean"
        },
        "uptime_s": {
          "type": "integer",
          "minimum": 0
        },
        "profile": {
          "type": "string"
        },
        "command": {
          "type": "array",
          "items": {
            "type": "string"
          }
        },
        "backend": {
          "enum": [
            "",
            "userspace",
            "direct",
            "veth"
          ],
          "description": "how the port reaches the server, as in the ready event; empty until ready"
        },
        "backend_fallback": {
          "type": [
            "string",
            "null"
          ],
          "description": "as in the ready event: why direct is not the backend serving; null when it is, or before ready"
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
          "description": "as in the ready event: the host loopbacks the forwarder serves; empty before ready"
        },
        "log": {
          "type": "string",
          "description": "the server's log file"
        }
      }
    }
  }
} as const;
