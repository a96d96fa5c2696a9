// GENERATED from docs/result.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * One record per sandboxed run (SPEC §6). Written atomically to --result FILE. Every string is valid UTF-8: bytes that are not (in the output's tails, the command, a name) are replaced, one U+FFFD per ill-formed sequence as Python's bytes.decode('utf-8', 'replace') does; control characters, DEL, C1 and bidirectional controls are written as \uXXXX escapes (base/text_safety.h).
 */
export interface ResultRecord {
  schema: "stockade.result/v1";
  name: string;
  profile: string;
  command: string[];
  status: "passed" | "failed" | "timed_out" | "blocked" | "cancelled" | "error";
  reason:
    | null
    | "nonzero_exit"
    | "signal"
    | "timeout"
    | "cpu_time"
    | "memory_limit"
    | "pids_limit"
    | "output_limit"
    | "seccomp"
    | "not_found"
    | "not_executable"
    | "spawn_failed"
    | "sandbox_unavailable"
    | "invalid_bounds"
    | "not_ready"
    | "aborted";
  /**
   * Present when the command ended by the signal of a bound the profile set (reason stays as it is): SIGXFSZ is the file size bound (RLIMIT_FSIZE, a write past it), SIGXCPU and the SIGKILL after it the CPU time bound (RLIMIT_CPU). Names the bound and the value it had.
   */
  bound?: {
    limit: "file_size" | "cpu_time";
    rlimit: "RLIMIT_FSIZE" | "RLIMIT_CPU";
    value: number;
    unit: "bytes" | "seconds";
  };
  /**
   * Present when the command ran and failed and the sandbox is a likely cause that no seccomp denial names (reason stays as it is; docs/contract.md, "detail"). Each entry says how sure it is in `evidence`: a bound from the kernel's own accounting (cgroup_events, cpu_accounting) or from the signal alone (signal: SIGXFSZ, which a command can also send itself); a layout fact judged from stockade's own mount plan, met by a path that the command's output (stderr or stdout) names beside "Read-only file system" or "No such file or directory": the failure is the command's word, the layout fact stockade's. At most four bounds and four layout facts.
   */
  detail?: (BoundDetail | LayoutDetail)[];
  exit_code: number | null;
  signal: number | null;
  duration_ms: number;
  cpu_ms: number;
  /**
   * stockade's own CPU time for this run (user + system of the thread that built, supervised and tore down the sandbox), which no limit of the sandbox's counts: refused calls answered, output read and hashed. 0 when nothing was started.
   */
  supervisor_cpu_ms: number;
  peak_memory_bytes: number;
  stdout: Stream;
  stderr: Stream;
  stragglers_killed: number;
  /**
   * The host uid the sandbox ran as (G3): the caller's rootless, a leased one as root; null when nothing was started.
   */
  host_uid: number | null;
  /**
   * The host gid the sandbox ran as, as host_uid.
   */
  host_gid: number | null;
  denials?: {
    syscall: string;
    count: number;
  }[];
  enforced: {
    user_ns: boolean;
    mount_ns: boolean;
    pid_ns: boolean;
    net_ns: boolean;
    ipc_ns: boolean;
    uts_ns: boolean;
    cgroup_ns: boolean;
    no_new_privs: boolean;
    seccomp: null | "default" | "custom" | "stockade-guard";
    capabilities: null | "none";
    memory: null | "cgroup2" | "cgroup1" | "rlimit";
    pids: null | "cgroup2" | "cgroup1" | "rlimit";
    cpu_time: null | "rlimit";
    landlock: string | null;
  };
  /**
   * the sandbox the run got (SPEC section 10): full (every namespace) or landlock (no user namespace could be had and the profile or --min-tier allowed the lower tier; each guarantee it lost is in degraded); null when the run was refused before any sandbox was attempted
   */
  tier: "full" | "landlock" | null;
  degraded: string[];
  /**
   * present when the worktree's .git is a file or a symlink: whether the gitdir it names was honoured (a genuine linked worktree, see docs/threat-model.md) or refused
   */
  git?: {
    file: string;
    gitdir: "honoured" | "inside_worktree" | "refused";
    exposed: string | null;
    reason: string | null;
  };
  /**
   * present when the profile names worktree entries to hide or keep read-only (filesystem.worktree, --show, --writable): how many were covered, the first 32 of each as /repo/... paths (names only, never content), the hidden or read-only names that appeared during the run, and the walk's extent (docs/guarantees.md, G2)
   */
  worktree_masks?: {
    hidden: MaskedNames;
    read_only: MaskedNames;
    created: MaskedNames;
    linked?: MaskedNames1;
    entries_examined: number;
    unlistable: number;
    /**
     * directories the walk before the run did not read, their inode and ctime unchanged since a walk kept in the caller's state directory (docs/performance.md)
     */
    directories_reused?: number;
    /**
     * present when the walk after the run stopped short, and `created` may miss names the run made: why (a bound, or a name it could not judge, such as a link the next run refuses); the next run walks the whole worktree again
     */
    created_unchecked?: string;
    truncated_by: null | "max_entries" | "max_depth" | "path_length";
  };
  error: null | {
    stage: string;
    message: string;
    errno: number;
  };
}
export interface BoundDetail {
  kind: "bound";
  limit: "file_size" | "cpu_time" | "memory" | "pids";
  mechanism: "RLIMIT_FSIZE" | "RLIMIT_CPU" | "cgroup2" | "cgroup1";
  value: number;
  unit: "bytes" | "seconds" | "processes";
  /**
   * cgroup_events: the memory or pids cgroup counted the kill or the refused fork; cpu_accounting: the command died of SIGXCPU or SIGKILL with the CPU time the kernel accounted at the bound; signal: the command died of SIGXFSZ; stderr or stdout (file_size only): the output reports "File too large" (EFBIG), what a program that ignores SIGXFSZ gets: the bound is the profile's, that the command met it the output's word
   */
  evidence: "cgroup_events" | "cpu_accounting" | "signal" | "stderr" | "stdout";
  text: string;
}
export interface LayoutDetail {
  kind: "layout";
  /**
   * read_only: path lies on a read-only mount, or in the sandbox's read-only root; absent: the layout holds nothing at path (below a directory that holds only what stockade placed there, or below a hidden name)
   */
  fact: "read_only" | "absent";
  /**
   * what the output reported
   */
  error: "EROFS" | "ENOENT";
  /**
   * as the output named it
   */
  path: string;
  /**
   * the place in stockade's mount plan that decides it: the read-only mount (/usr), the hidden name, or the directory stockade made (/ for the root, /etc), /dev
   */
  layout_path: string;
  /**
   * read_only_mount: a read-only mount (layout_path its mount point); masked: a hidden name, an empty read-only mount; sandbox_root: the read-only root stockade made, or a directory made in it; devices: /dev, which holds the nodes and links stockade placed there
   */
  layout_kind: "read_only_mount" | "masked" | "sandbox_root" | "devices";
  /**
   * the stream whose last 4 KiB named the path: the command's own text, so only the link between the failure and the layout fact rests on it
   */
  evidence: "stderr" | "stdout";
  text: string;
}
export interface Stream {
  bytes: number;
  sha256: string;
  /**
   * The stream's last bytes (at most 4096), made valid UTF-8 by U+FFFD replacement; `bytes` and `sha256` are of the exact bytes.
   */
  tail: string;
  truncated: boolean;
}
export interface MaskedNames {
  count: number;
  /**
   * @maxItems 32
   */
  first: string[];
}
/**
 * hidden or read-only files that have other names (hard links) in the worktree: the other names are not covered with them, and read as the file (docs/threat-model.md)
 */
export interface MaskedNames1 {
  count: number;
  /**
   * @maxItems 32
   */
  first: string[];
}

export const resultSchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:result:v1",
  "title": "stockade run result",
  "description": "One record per sandboxed run (SPEC §6). Written atomically to --result FILE. Every string is valid UTF-8: bytes that are not (in the output's tails, the command, a name) are replaced, one U+FFFD per ill-formed sequence as Python's bytes.decode('utf-8', 'replace') does; control characters, DEL, C1 and bidirectional controls are written as \\uXXXX escapes (base/text_safety.h).",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "schema",
    "name",
    "profile",
    "command",
    "status",
    "reason",
    "exit_code",
    "signal",
    "duration_ms",
    "cpu_ms",
    "supervisor_cpu_ms",
    "peak_memory_bytes",
    "stdout",
    "stderr",
    "stragglers_killed",
    "host_uid",
    "host_gid",
    "tier",
    "enforced",
    "degraded",
    "error"
  ],
  "properties": {
    "schema": {
      "const": "stockade.result/v1"
    },
    "name": {
      "type": "string"
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
    "status": {
      "enum": [
        "passed",
        "failed",
        "timed_out",
        "blocked",
        "cancelled",
        "error"
      ]
    },
    "reason": {
      "enum": [
        null,
        "nonzero_exit",
        "signal",
        "timeout",
        "cpu_time",
        "memory_limit",
        "pids_limit",
        "output_limit",
        "seccomp",
        "not_found",
        "not_executable",
        "spawn_failed",
        "sandbox_unavailable",
        "invalid_bounds",
        "not_ready",
        "aborted"
      ]
    },
    "bound": {
      "description": "Present when the command ended by the signal of a bound the profile set (reason stays as it is): SIGXFSZ is the file size bound (RLIMIT_FSIZE, a write past it), SIGXCPU and the SIGKILL after it the CPU time bound (RLIMIT_CPU). Names the bound and the value it had.",
      "type": "object",
      "additionalProperties": false,
      "required": [
        "limit",
        "rlimit",
        "value",
        "unit"
      ],
      "properties": {
        "limit": {
          "enum": [
            "file_size",
            "cpu_time"
          ]
        },
        "rlimit": {
          "enum": [
            "RLIMIT_FSIZE",
            "RLIMIT_CPU"
          ]
        },
        "value": {
          "type": "integer",
          "minimum": 0
        },
        "unit": {
          "enum": [
            "bytes",
            "seconds"
          ]
        }
      }
    },
    "detail": {
      "description": "Present when the command ran and failed and the sandbox is a likely cause that no seccomp denial names (reason stays as it is; docs/contract.md, \"detail\"). Each entry says how sure it is in `evidence`: a bound from the kernel's own accounting (cgroup_events, cpu_accounting) or from the signal alone (signal: SIGXFSZ, which a command can also send itself); a layout fact judged from stockade's own mount plan, met by a path that the command's output (stderr or stdout) names beside \"Read-only file system\" or \"No such file or directory\": the failure is the command's word, the layout fact stockade's. At most four bounds and four layout facts.",
      "type": "array",
      "items": {
        "oneOf": [
          {
            "$ref": "#/$defs/boundDetail"
          },
          {
            "$ref": "#/$defs/layoutDetail"
          }
        ]
      }
    },
    "exit_code": {
      "type": [
        "integer",
        "null"
      ],
      "minimum": 0,
      "maximum": 255
    },
    "signal": {
      "type": [
        "integer",
        "null"
      ],
      "minimum": 1,
      "maximum": 64
    },
    "duration_ms": {
      "type": "integer",
      "minimum": 0
    },
    "cpu_ms": {
      "type": "integer",
      "minimum": 0
    },
    "supervisor_cpu_ms": {
      "description": "stockade's own CPU time for this run (user + system of the thread that built, supervised and tore down the sandbox), which no limit of the sandbox's counts: refused calls answered, output read and hashed. 0 when nothing was started.",
      "type": "integer",
      "minimum": 0
    },
    "peak_memory_bytes": {
      "type": "integer",
      "minimum": 0
    },
    "stdout": {
      "$ref": "#/$defs/stream"
    },
    "stderr": {
      "$ref": "#/$defs/stream"
    },
    "stragglers_killed": {
      "type": "integer",
      "minimum": 0
    },
    "host_uid": {
      "description": "The host uid the sandbox ran as (G3): the caller's rootless, a leased one as root; null when nothing was started.",
      "type": [
        "integer",
        "null"
      ],
      "minimum": 1,
      "maximum": 4294967294
    },
    "host_gid": {
      "description": "The host gid the sandbox ran as, as host_uid.",
      "type": [
        "integer",
        "null"
      ],
      "minimum": 0,
      "maximum": 4294967294
    },
    "denials": {
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "syscall",
          "count"
        ],
        "properties": {
          "syscall": {
            "type": "string"
          },
          "count": {
            "type": "integer",
            "minimum": 1
          }
        }
      }
    },
    "enforced": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "user_ns",
        "mount_ns",
        "pid_ns",
        "net_ns",
        "ipc_ns",
        "uts_ns",
        "cgroup_ns",
        "seccomp",
        "capabilities",
        "no_new_privs",
        "memory",
        "pids",
        "cpu_time",
        "landlock"
      ],
      "properties": {
        "user_ns": {
          "type": "boolean"
        },
        "mount_ns": {
          "type": "boolean"
        },
        "pid_ns": {
          "type": "boolean"
        },
        "net_ns": {
          "type": "boolean"
        },
        "ipc_ns": {
          "type": "boolean"
        },
        "uts_ns": {
          "type": "boolean"
        },
        "cgroup_ns": {
          "type": "boolean"
        },
        "no_new_privs": {
          "type": "boolean"
        },
        "seccomp": {
          "enum": [
            null,
            "default",
            "custom",
            "stockade-guard"
          ]
        },
        "capabilities": {
          "enum": [
            null,
            "none"
          ]
        },
        "memory": {
          "enum": [
            null,
            "cgroup2",
            "cgroup1",
            "rlimit"
          ]
        },
        "pids": {
          "enum": [
            null,
            "cgroup2",
            "cgroup1",
            "rlimit"
          ]
        },
        "cpu_time": {
          "enum": [
            null,
            "rlimit"
          ]
        },
        "landlock": {
          "type": [
            "string",
            "null"
          ],
          "pattern": "^abi-[0-9]+$"
        }
      }
    },
    "tier": {
      "description": "the sandbox the run got (SPEC section 10): full (every namespace) or landlock (no user namespace could be had and the profile or --min-tier allowed the lower tier; each guarantee it lost is in degraded); null when the run was refused before any sandbox was attempted",
      "enum": [
        "full",
        "landlock",
        null
      ]
    },
    "degraded": {
      "type": "array",
      "items": {
        "type": "string"
      }
    },
    "git": {
      "description": "present when the worktree's .git is a file or a symlink: whether the gitdir it names was honoured (a genuine linked worktree, see docs/threat-model.md) or refused",
      "type": "object",
      "additionalProperties": false,
      "required": [
        "file",
        "gitdir",
        "exposed",
        "reason"
      ],
      "properties": {
        "file": {
          "type": "string"
        },
        "gitdir": {
          "enum": [
            "honoured",
            "inside_worktree",
            "refused"
          ]
        },
        "exposed": {
          "type": [
            "string",
            "null"
          ]
        },
        "reason": {
          "type": [
            "string",
            "null"
          ]
        }
      }
    },
    "worktree_masks": {
      "description": "present when the profile names worktree entries to hide or keep read-only (filesystem.worktree, --show, --writable): how many were covered, the first 32 of each as /repo/... paths (names only, never content), the hidden or read-only names that appeared during the run, and the walk's extent (docs/guarantees.md, G2)",
      "type": "object",
      "additionalProperties": false,
      "required": [
        "hidden",
        "read_only",
        "created",
        "entries_examined",
        "unlistable",
        "truncated_by"
      ],
      "properties": {
        "hidden": {
          "$ref": "#/$defs/maskedNames"
        },
        "read_only": {
          "$ref": "#/$defs/maskedNames"
        },
        "created": {
          "$ref": "#/$defs/maskedNames"
        },
        "linked": {
          "$ref": "#/$defs/maskedNames",
          "description": "hidden or read-only files that have other names (hard links) in the worktree: the other names are not covered with them, and read as the file (docs/threat-model.md)"
        },
        "entries_examined": {
          "type": "integer",
          "minimum": 0
        },
        "unlistable": {
          "type": "integer",
          "minimum": 0
        },
        "directories_reused": {
          "type": "integer",
          "minimum": 0,
          "description": "directories the walk before the run did not read, their inode and ctime unchanged since a walk kept in the caller's state directory (docs/performance.md)"
        },
        "created_unchecked": {
          "type": "string",
          "description": "present when the walk after the run stopped short, and `created` may miss names the run made: why (a bound, or a name it could not judge, such as a link the next run refuses); the next run walks the whole worktree again"
        },
        "truncated_by": {
          "enum": [
            null,
            "max_entries",
            "max_depth",
            "path_length"
          ]
        }
      }
    },
    "error": {
      "oneOf": [
        {
          "type": "null"
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": [
            "stage",
            "message",
            "errno"
          ],
          "properties": {
            "stage": {
              "type": "string"
            },
            "message": {
              "type": "string"
            },
            "errno": {
              "type": "integer",
              "minimum": 0
            }
          }
        }
      ]
    }
  },
  "$defs": {
    "boundDetail": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "kind",
        "limit",
        "mechanism",
        "value",
        "unit",
        "evidence",
        "text"
      ],
      "properties": {
        "kind": {
          "const": "bound"
        },
        "limit": {
          "enum": [
            "file_size",
            "cpu_time",
            "memory",
            "pids"
          ]
        },
        "mechanism": {
          "enum": [
            "RLIMIT_FSIZE",
            "RLIMIT_CPU",
            "cgroup2",
            "cgroup1"
          ]
        },
        "value": {
          "type": "integer",
          "minimum": 0
        },
        "unit": {
          "enum": [
            "bytes",
            "seconds",
            "processes"
          ]
        },
        "evidence": {
          "description": "cgroup_events: the memory or pids cgroup counted the kill or the refused fork; cpu_accounting: the command died of SIGXCPU or SIGKILL with the CPU time the kernel accounted at the bound; signal: the command died of SIGXFSZ; stderr or stdout (file_size only): the output reports \"File too large\" (EFBIG), what a program that ignores SIGXFSZ gets: the bound is the profile's, that the command met it the output's word",
          "enum": [
            "cgroup_events",
            "cpu_accounting",
            "signal",
            "stderr",
            "stdout"
          ]
        },
        "text": {
          "type": "string"
        }
      }
    },
    "layoutDetail": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "kind",
        "fact",
        "error",
        "path",
        "layout_path",
        "layout_kind",
        "evidence",
        "text"
      ],
      "properties": {
        "kind": {
          "const": "layout"
        },
        "fact": {
          "description": "read_only: path lies on a read-only mount, or in the sandbox's read-only root; absent: the layout holds nothing at path (below a directory that holds only what stockade placed there, or below a hidden name)",
          "enum": [
            "read_only",
            "absent"
          ]
        },
        "error": {
          "description": "what the output reported",
          "enum": [
            "EROFS",
            "ENOENT"
          ]
        },
        "path": {
          "type": "string",
          "maxLength": 256,
          "description": "as the output named it"
        },
        "layout_path": {
          "type": "string",
          "pattern": "^/",
          "description": "the place in stockade's mount plan that decides it: the read-only mount (/usr), the hidden name, or the directory stockade made (/ for the root, /etc), /dev"
        },
        "layout_kind": {
          "description": "read_only_mount: a read-only mount (layout_path its mount point); masked: a hidden name, an empty read-only mount; sandbox_root: the read-only root stockade made, or a directory made in it; devices: /dev, which holds the nodes and links stockade placed there",
          "enum": [
            "read_only_mount",
            "masked",
            "sandbox_root",
            "devices"
          ]
        },
        "evidence": {
          "description": "the stream whose last 4 KiB named the path: the command's own text, so only the link between the failure and the layout fact rests on it",
          "enum": [
            "stderr",
            "stdout"
          ]
        },
        "text": {
          "type": "string"
        }
      }
    },
    "maskedNames": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "count",
        "first"
      ],
      "properties": {
        "count": {
          "type": "integer",
          "minimum": 0
        },
        "first": {
          "type": "array",
          "maxItems": 32,
          "items": {
            "type": "string",
            "pattern": "^/repo/"
          }
        }
      }
    },
    "stream": {
      "type": "object",
      "additionalProperties": false,
      "required": [
        "bytes",
        "sha256",
        "tail",
        "truncated"
      ],
      "properties": {
        "bytes": {
          "type": "integer",
          "minimum": 0
        },
        "sha256": {
          "type": "string",
          "pattern": "^[0-9a-f]{64}$"
        },
        "tail": {
          "type": "string",
          "maxLength": 4096,
          "description": "The stream's last bytes (at most 4096), made valid UTF-8 by U+FFFD replacement; `bytes` and `sha256` are of the exact bytes."
        },
        "truncated": {
          "type": "boolean"
        }
      }
    }
  }
} as const;
