// GENERATED from docs/secret-names.schema.json by scripts/generate.mjs. Do not edit;
// run `npm run generate` after changing the schema.

/**
 * SPEC §5's secret-shaped environment names as the binary matches them, upper-cased: `stockade profile secret-names --json` (cli/cli.cpp). A name is secret-shaped when it contains a substring, equals a name, or starts or ends with a prefix or suffix.
 */
export interface SecretNamesRecord {
  schema: "stockade.secret-names/v1";
  substrings: string[];
  names: string[];
  prefixes: string[];
  suffixes: string[];
}

export const secret_namesSchema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:stockade:secret-names:v1",
  "title": "stockade secret-shaped names",
  "description": "SPEC §5's secret-shaped environment names as the binary matches them, upper-cased: `stockade profile secret-names --json` (cli/cli.cpp). A name is secret-shaped when it contains a substring, equals a name, or starts or ends with a prefix or suffix.",
  "type": "object",
  "additionalProperties": false,
  "required": [
    "schema",
    "substrings",
    "names",
    "prefixes",
    "suffixes"
  ],
  "properties": {
    "schema": {
      "const": "stockade.secret-names/v1"
    },
    "substrings": {
      "type": "array",
      "items": {
        "type": "string",
        "minLength": 1
      }
    },
    "names": {
      "type": "array",
      "items": {
        "type": "string",
        "minLength": 1
      }
    },
    "prefixes": {
      "type": "array",
      "items": {
        "type": "string",
        "minLength": 1
      }
    },
    "suffixes": {
      "type": "array",
      "items": {
        "type": "string",
        "minLength": 1
      }
    }
  }
} as const;
