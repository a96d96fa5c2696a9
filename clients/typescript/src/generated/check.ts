// GENERATED from docs/check.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * What this host can enforce for this user: `stockade check --json` (runtime/check/host_report_output.cpp). One entry per guarantee, feature, mechanism and limit, each with what enforces it, or why not and the fix; then the setup steps the probe ran, in the order `stockade run` runs them.
 */
export interface CheckRecord {
  schema: "stockade.check/v1";
  /**
   * the effective uid the host was checked for
   */
  uid: number;
  /**
   * uname's release
   */
  kernel: string;
  /**
   * whether the default profile runs here: no required check is unavailable
   */
  can_run: boolean;
  /**
   * which sandbox this host gives this user (SPEC section 10): full (every namespace), landlock (no user namespace, but the lower tier's pieces; a run takes it only where a profile or --min-tier landlock allows it) or none
   */
  tier: {
    tier: "full" | "landlock" | "none";
    /**
     * why this tier, naming the first missing piece
     */
    reason: string;
    /**
     * the fix for each missing piece, as "id: fix"
     */
    fixes: string[];
  };
  /**
   * one line per required check that is unavailable: its id, a colon, and why ("proc: /proc is over-mounted ...")
   */
  blockers: string[];
  elapsed_us: number;
  /**
   * microseconds each probe took, by probe name
   */
  probe_us: {
    [k: string]: number | undefined;
  };
  checks: Check[];
  /**
   * each step of the child's setup table that the probe ran, in order, with the errno it gave (0: it worked); the first failure ends the list
   */
  setup_steps: {
    step: string;
    errno: number;
  }[];
}
export interface Check {
  /**
   * G1..G7 for SPEC's guarantees, a short name otherwise
   */
  id: string;
  kind: "guarantee" | "feature" | "mechanism" | "limit";
  title: string;
  state: "ok" | "degraded" | "unavailable";
  /**
   * what enforces it here
   */
  mechanism: string | null;
  /**
   * why it is degraded or unavailable
   */
  reason: string | null;
  /**
   * what would make it ok
   */
  fix: string | null;
  /**
   * whether the default profile refuses to run without it
   */
  required: boolean;
}

export const checkSchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:check:v1",
  "title": "stockade host check",
  "description": "What this host can enforce for this user: `stockade check --json` (runtime/check/host_report_output.cpp). One entry per guarantee, feature, mechanism and limit, each with what enforces it, or why not and the fix; then the setup steps the probe ran, in the order `stockade run` runs them.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "schema",
    "uid",
    "kernel",
    "can_run",
    "tier",
    "blockers",
    "elapsed_us",
    "probe_us",
    "checks",
    "setup_steps"
  ],
  "properties": {
    "schema": {
      "const": "stockade.check/v1"
    },
    "uid": {
      "type": "integer",
      "minimum": 0,
      "description": "the effective uid the host was checked for"
    },
    "kernel": {
      "type": "string",
      "description": "uname's release"
    },
    "can_run": {
      "type": "boolean",
      "description": "whether the default profile runs here: no required check is unavailable"
    },
    "tier": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "tier",
        "reason",
        "fixes"
      ],
      "description": "which sandbox this host gives this user (SPEC section 10): full (every namespace), landlock (no user namespace, but the lower tier's pieces; a run takes it only where a profile or --min-tier landlock allows it) or none",
      "properties": {
        "tier": {
          "enum": [
            "full",
            "landlock",
            "none"
          ]
        },
        "reason": {
          "type": "string",
          "description": "why this tier, naming the first missing piece"
        },
        "fixes": {
          "type": "array",
          "items": {
            "type": "string"
          },
          "description": "the fix for each missing piece, as \"id: fix\""
        }
      }
    },
    "blockers": {
      "type": "array",
      "items": {
        "type": "string"
      },
      "description": "one line per required check that is unavailable: its id, a colon, and why (\"proc: /proc is over-mounted ...\")"
    },
    "elapsed_us": {
      "type": "integer",
      "minimum": 0
    },
    "probe_us": {
      "type": "object",
      "description": "microseconds each probe took, by probe name",
      "additionalProperties": {
        "type": "integer",
        "minimum": 0
      }
    },
    "checks": {
      "type": "array",
      "items": {
        "$ref": "#/$defs/check"
      }
    },
    "setup_steps": {
      "type": "array",
      "description": "each step of the child's setup table that the probe ran, in order, with the errno it gave (0: it worked); the first failure ends the list",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "step",
          "errno"
        ],
        "properties": {
          "step": {
            "type": "string"
          },
          "errno": {
            "type": "integer",
            "minimum": 0
          }
        }
      }
    }
  },
  "$defs": {
    "check": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "id",
        "kind",
        "title",
        "state",
        "mechanism",
        "reason",
        "fix",
        "required"
      ],
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "G1..G7 for SPEC's guarantees, a short name otherwise"
        },
        "kind": {
          "enum": [
            "guarantee",
            "feature",
            "mechanism",
            "limit"
          ]
        },
        "title": {
          "type": "string"
        },
        "state": {
          "enum": [
            "ok",
            "degraded",
            "unavailable"
          ]
        },
        "mechanism": {
          "type": [
            "string",
            "null"
          ],
          "description": "what enforces it here"
        },
        "reason": {
          "type": [
            "string",
            "null"
          ],
          "description": "why it is degraded or unavailable"
        },
        "fix": {
          "type": [
            "string",
            "null"
          ],
          "description": "what would make it ok"
        },
        "required": {
          "type": "boolean",
          "description": "whether the default profile refuses to run without it"
        }
      }
    }
  }
} as const;
