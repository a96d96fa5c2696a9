// GENERATED from docs/bench.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * @minItems 3
 * @maxItems 3
 */
export type Load = [number, number, number];

/**
 * What containment costs on this host: `stockade bench --json` (runtime/bench/bench_report.cpp). Wall times of one sandboxed /bin/true built up a layer at a time, the levels interleaved round by round; optionally bubblewrap beside the full run; then sandboxes per second. A measurement, never a pass or fail.
 */
export interface BenchRecord {
  schema: "stockade.bench/v1";
  command: string[];
  runs: number;
  warmup: number;
  interleaved: true;
  machine: {
    kernel: string;
    cpus: number;
    uid: number;
    mode: "root" | "rootless";
    load_before: Load;
    load_after: Load;
  };
  /**
   * @minItems 1
   */
  levels: [
    {
      name: string;
      label: string;
      median_ms: number;
      p95_ms: number;
      p99_ms: number;
      samples: number;
      /**
       * over the first level, bare fork+exec; may be negative in a noisy run
       */
      overhead_ms: number;
      /**
       * what this host used for the level (cgroup1, cgroup2, rlimits, abi-N)
       */
      mechanism?: string;
    },
    ...{
      name: string;
      label: string;
      median_ms: number;
      p95_ms: number;
      p99_ms: number;
      samples: number;
      /**
       * over the first level, bare fork+exec; may be negative in a noisy run
       */
      overhead_ms: number;
      /**
       * what this host used for the level (cgroup1, cgroup2, rlimits, abi-N)
       */
      mechanism?: string;
    }[]
  ];
  /**
   * null without --compare; bubblewrap beside `stockade run` otherwise
   */
  comparison:
    | null
    | {
        tool: "bwrap";
        available: false;
        reason: string;
      }
    | {
        tool: "bwrap";
        available: true;
        bwrap: string;
        bwrap_args: string[];
        stockade_args: string[];
        worktree: string;
        stockade: Latency;
        bwrap_latency: Latency;
        /**
         * stockade's median over bubblewrap's
         */
        ratio: number;
        /**
         * SPEC §9's goal
         */
        target_ratio: number;
        target_met: boolean;
      };
  throughput: {
    profile: string;
    sequential_runs: number;
    sequential_per_s: number;
    concurrency: number;
    concurrent_runs: number;
    concurrent_per_s: number;
  };
}
export interface Latency {
  median_ms: number;
  p95_ms: number;
  p99_ms: number;
  samples: number;
}

export const benchSchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:bench:v1",
  "title": "stockade bench",
  "description": "What containment costs on this host: `stockade bench --json` (runtime/bench/bench_report.cpp). Wall times of one sandboxed /bin/true built up a layer at a time, the levels interleaved round by round; optionally bubblewrap beside the full run; then sandboxes per second. A measurement, never a pass or fail.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "schema",
    "command",
    "runs",
    "warmup",
    "interleaved",
    "machine",
    "levels",
    "comparison",
    "throughput"
  ],
  "properties": {
    "schema": {
      "const": "stockade.bench/v1"
    },
    "command": {
      "type": "array",
      "items": {
        "type": "string"
      }
    },
    "runs": {
      "type": "integer",
      "minimum": 1
    },
    "warmup": {
      "type": "integer",
      "minimum": 0
    },
    "interleaved": {
      "const": true
    },
    "machine": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "kernel",
        "cpus",
        "uid",
        "mode",
        "load_before",
        "load_after"
      ],
      "properties": {
        "kernel": {
          "type": "string"
        },
        "cpus": {
          "type": "integer",
          "minimum": 1
        },
        "uid": {
          "type": "integer",
          "minimum": 0
        },
        "mode": {
          "enum": [
            "root",
            "rootless"
          ]
        },
        "load_before": {
          "$ref": "#/$defs/load"
        },
        "load_after": {
          "$ref": "#/$defs/load"
        }
      }
    },
    "levels": {
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "name",
          "label",
          "median_ms",
          "p95_ms",
          "p99_ms",
          "samples",
          "overhead_ms"
        ],
        "properties": {
          "name": {
            "type": "string",
            "minLength": 1
          },
          "label": {
            "type": "string"
          },
          "median_ms": {
            "type": "number",
            "minimum": 0
          },
          "p95_ms": {
            "type": "number",
            "minimum": 0
          },
          "p99_ms": {
            "type": "number",
            "minimum": 0
          },
          "samples": {
            "type": "integer",
            "minimum": 0
          },
          "overhead_ms": {
            "type": "number",
            "description": "over the first level, bare fork+exec; may be negative in a noisy run"
          },
          "mechanism": {
            "type": "string",
            "description": "what this host used for the level (cgroup1, cgroup2, rlimits, abi-N)"
          }
        }
      }
    },
    "comparison": {
      "description": "null without --compare; bubblewrap beside `stockade run` otherwise",
      "oneOf": [
        {
          "type": "null"
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "tool",
            "available",
            "reason"
          ],
          "properties": {
            "tool": {
              "const": "bwrap"
            },
            "available": {
              "const": false
            },
            "reason": {
              "type": "string"
            }
          }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "tool",
            "available",
            "bwrap",
            "bwrap_args",
            "stockade_args",
            "worktree",
            "stockade",
            "bwrap_latency",
            "ratio",
            "target_ratio",
            "target_met"
          ],
          "properties": {
            "tool": {
              "const": "bwrap"
            },
            "available": {
              "const": true
            },
            "bwrap": {
              "type": "string"
            },
            "bwrap_args": {
              "type": "array",
              "items": {
                "type": "string"
              }
            },
            "stockade_args": {
              "type": "array",
              "items": {
                "type": "string"
              }
            },
            "worktree": {
              "type": "string"
            },
            "stockade": {
              "$ref": "#/$defs/latency"
            },
            "bwrap_latency": {
              "$ref": "#/$defs/latency"
            },
            "ratio": {
              "type": "number",
              "minimum": 0,
              "description": "stockade's median over bubblewrap's"
            },
            "target_ratio": {
              "type": "number",
              "description": "SPEC §9's goal"
            },
            "target_met": {
              "type": "boolean"
            }
          }
        }
      ]
    },
    "throughput": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "profile",
        "sequential_runs",
        "sequential_per_s",
        "concurrency",
        "concurrent_runs",
        "concurrent_per_s"
      ],
      "properties": {
        "profile": {
          "type": "string"
        },
        "sequential_runs": {
          "type": "integer",
          "minimum": 0
        },
        "sequential_per_s": {
          "type": "number",
          "minimum": 0
        },
        "concurrency": {
          "type": "integer",
          "minimum": 1
        },
        "concurrent_runs": {
          "type": "integer",
          "minimum": 0
        },
        "concurrent_per_s": {
          "type": "number",
          "minimum": 0
        }
      }
    }
  },
  "$defs": {
    "load": {
      "type": "array",
      "minItems": 3,
      "maxItems": 3,
      "items": {
        "type": "number",
        "minimum": 0
      }
    },
    "latency": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "median_ms",
        "p95_ms",
        "p99_ms",
        "samples"
      ],
      "properties": {
        "median_ms": {
          "type": "number",
          "minimum": 0
        },
        "p95_ms": {
          "type": "number",
          "minimum": 0
        },
        "p99_ms": {
          "type": "number",
          "minimum": 0
        },
        "samples": {
          "type": "integer",
          "minimum": 0
        }
      }
    }
  }
} as const;
