// GENERATED from docs/verdict.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * What `stockade oracle` decided, with its evidence (SPEC §8). The run's own record is embedded as `result` (docs/result.schema.json).
 */
export interface VerdictRecord {
  schema: "stockade.verdict/v1";
  verdict: "pass" | "fail" | "error" | "timeout" | "blocked";
  contradictions: string[];
  failures: string[];
  counts: {
    tests: number;
    passed: number;
    failed: number;
    errored: number;
    skipped: number;
  };
  cases: {
    name: string;
    classname: string;
    status: "passed" | "failed" | "errored" | "skipped";
    duration_s: number;
    message: string;
  }[];
  report: null | {
    format: "junit" | "tap";
    dialect: string;
    files: string[];
  };
  expected: null | {
    declared: number;
    missing: string[];
    not_passed: string[];
  };
  worktree: {
    tree_before: string;
    tree_after: string;
    created: string[];
    changed: string[];
    deleted: string[];
  };
  integrity: {
    held_unchanged: boolean;
    held_changed: string[];
    head_before: string;
    head_after: string;
    head_unchanged: boolean;
    git_unchanged: boolean;
  };
  result: {} | null;
}

export const verdictSchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:verdict:v1",
  "title": "stockade oracle verdict",
  "description": "What `stockade oracle` decided, with its evidence (SPEC §8). The run's own record is embedded as `result` (docs/result.schema.json).",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "schema",
    "verdict",
    "contradictions",
    "failures",
    "counts",
    "cases",
    "report",
    "expected",
    "worktree",
    "integrity",
    "result"
  ],
  "properties": {
    "schema": {
      "const": "stockade.verdict/v1"
    },
    "verdict": {
      "enum": [
        "pass",
        "fail",
        "error",
        "timeout",
        "blocked"
      ]
    },
    "contradictions": {
      "type": "array",
      "items": {
        "type": "string"
      }
    },
    "failures": {
      "type": "array",
      "items": {
        "type": "string"
      }
    },
    "counts": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "tests",
        "passed",
        "failed",
        "errored",
        "skipped"
      ],
      "properties": {
        "tests": {
          "type": "integer",
          "minimum": 0
        },
        "passed": {
          "type": "integer",
          "minimum": 0
        },
        "failed": {
          "type": "integer",
          "minimum": 0
        },
        "errored": {
          "type": "integer",
          "minimum": 0
        },
        "skipped": {
          "type": "integer",
          "minimum": 0
        }
      }
    },
    "cases": {
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "name",
          "classname",
          "status",
          "duration_s",
          "message"
        ],
        "properties": {
          "name": {
            "type": "string"
          },
          "classname": {
            "type": "string"
          },
          "status": {
            "enum": [
              "passed",
              "failed",
              "errored",
              "skipped"
            ]
          },
          "duration_s": {
            "type": "number",
            "minimum": 0
          },
          "message": {
            "type": "string"
          }
        }
      }
    },
    "report": {
      "oneOf": [
        {
          "type": "null"
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "format",
            "dialect",
            "files"
          ],
          "properties": {
            "format": {
              "enum": [
                "junit",
                "tap"
              ]
            },
            "dialect": {
              "type": "string"
            },
            "files": {
              "type": "array",
              "items": {
                "type": "string"
              }
            }
          }
        }
      ]
    },
    "expected": {
      "oneOf": [
        {
          "type": "null"
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "declared",
            "missing",
            "not_passed"
          ],
          "properties": {
            "declared": {
              "type": "integer",
              "minimum": 0
            },
            "missing": {
              "type": "array",
              "items": {
                "type": "string"
              }
            },
            "not_passed": {
              "type": "array",
              "items": {
                "type": "string"
              }
            }
          }
        }
      ]
    },
    "worktree": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "tree_before",
        "tree_after",
        "created",
        "changed",
        "deleted"
      ],
      "properties": {
        "tree_before": {
          "type": "string"
        },
        "tree_after": {
          "type": "string"
        },
        "created": {
          "type": "array",
          "items": {
            "type": "string"
          }
        },
        "changed": {
          "type": "array",
          "items": {
            "type": "string"
          }
        },
        "deleted": {
          "type": "array",
          "items": {
            "type": "string"
          }
        }
      }
    },
    "integrity": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "held_unchanged",
        "held_changed",
        "head_before",
        "head_after",
        "head_unchanged",
        "git_unchanged"
      ],
      "properties": {
        "held_unchanged": {
          "type": "boolean"
        },
        "held_changed": {
          "type": "array",
          "items": {
            "type": "string"
          }
        },
        "head_before": {
          "type": "string"
        },
        "head_after": {
          "type": "string"
        },
        "head_unchanged": {
          "type": "boolean"
        },
        "git_unchanged": {
          "type": "boolean"
        }
      }
    },
    "result": {
      "type": [
        "object",
        "null"
      ]
    }
  }
} as const;
