// GENERATED from docs/ps.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * The caller's running dev servers: `stockade ps --json` (serve/serve_command.cpp), an array with one entry per server, whatever its state.
 */
export type PsRecord = Server[];

export interface Server {
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
   * the server's log file
   */
  log: string;
}

export const psSchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:ps:v1",
  "title": "stockade dev servers",
  "description": "The caller's running dev servers: `stockade ps --json` (serve/serve_command.cpp), an array with one entry per server, whatever its state.",
  "type": "array",
  "items": {
    "$ref": "#/$defs/server"
  },
  "$defs": {
    "server": {
      "type": "object",
      "additionalProperties": false,
      "required": [
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
        "log": {
          "type": "string",
          "description": "the server's log file"
        }
      }
    }
  }
} as const;
