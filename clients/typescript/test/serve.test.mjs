// serve(): a dev server started, fetched from the host's loopback, its log
// followed, listed and stopped.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { serve, ps, serveArgs } from '../dist/index.js';
import { BINARY, randomPort } from './helpers.mjs';

test('a dev server: ready, fetched, logged, listed, stopped', async () => {
  const port = randomPort();
  const server = await serve({
    binary: BINARY,
    port,
    name: `client-test-${port}`,
    command: ['python3', '-u', '-m', 'http.server', String(port), '--bind', '127.0.0.1'],
    readyPattern: 'Serving HTTP',
    readyTimeout: 30,
  });
  try {
    assert.equal(server.port, port);
    assert.equal(server.name, `client-test-${port}`);
    assert.equal(server.url, `http://127.0.0.1:${port}/`);
    assert.equal(server.ready.event, 'ready');

    const res = await fetch(`${server.url}client-probe-${port}`);
    assert.equal(res.status, 404); // python's answer for a missing file: it came from inside
    await res.text();

    const entry = await server.ps();
    assert.ok(entry, 'ps does not list the server');
    assert.equal(entry.port, port);
    assert.equal(entry.ready, true);

    const seen = [];
    const deadline = setTimeout(() => assert.fail(`the log never showed the request: ${seen.join('\n')}`), 15000);
    for await (const line of server.logs()) {
      seen.push(line);
      if (line.includes(`GET /client-probe-${port}`)) break;
    }
    clearTimeout(deadline);
  } finally {
    const r = await server.stop();
    assert.equal(r.record.schema, 'stockade.result/v1');
    assert.equal(r.status, 'cancelled');
    assert.equal(r.record.name, `client-test-${port}`);
  }
  assert.equal((await server.stop()).status, 'cancelled', 'stop() is not idempotent');
  assert.ok(!(await ps({ binary: BINARY })).some((e) => e.port === port), 'still listed after stop');
  await assert.rejects(fetch(`http://127.0.0.1:${port}/`), 'the port still answers after stop');
});

test('a dev server that never gets ready rejects with its record', async () => {
  const port = randomPort();
  await assert.rejects(
    serve({ binary: BINARY, port, command: ['sleep', '30'], readyTimeout: 1 }),
    (e) => e.name === 'StockadeError' && e.record?.reason === 'not_ready',
  );
});

test('serveArgs: the exact argv, checked', () => {
  assert.deepEqual(serveArgs({ binary: BINARY, port: 45001, command: ['npm', 'run', 'dev'], readyPattern: 'ready in' }), [
    BINARY, 'serve', '--quiet', '--port=45001', '--ready-pattern=ready in', '--', 'npm', 'run', 'dev',
  ]);
  assert.throws(() => serveArgs({ binary: BINARY, port: 70000, command: ['x'] }), { option: 'port' });
  assert.deepEqual(serveArgs({ binary: BINARY, port: 45001, command: ['x'], netBackend: 'direct' }), [
    BINARY, 'serve', '--quiet', '--port=45001', '--net-backend=direct', '--', 'x',
  ]);
  assert.throws(() => serveArgs({ binary: BINARY, port: 45001, command: ['x'], netBackend: 'tun' }), { option: 'netBackend' });
});

test('a dev server through the direct backend says which way it took', async () => {
  const port = randomPort();
  const server = await serve({
    binary: BINARY,
    port,
    netBackend: 'direct',
    command: ['python3', '-m', 'http.server', String(port), '--bind', '127.0.0.1'],
    readyTimeout: 30,
  });
  try {
    // Root hands the server the host's listener; rootless, where the kernel
    // lets only CAP_NET_ADMIN filter a TCP socket, the forwarder serves.
    assert.ok(['direct', 'userspace'].includes(server.ready.backend), server.ready.backend);
    if (process.getuid() === 0) assert.equal(server.ready.backend, 'direct', server.ready.backend_fallback);
    const res = await fetch(`${server.url}`);
    assert.equal(res.status, 200);
    await res.text();
    assert.equal((await server.ps()).backend, server.ready.backend);
  } finally {
    await server.stop();
  }
});

test('a dev server on [::1] alone answers on both loopbacks under the default backend', async () => {
  const port = randomPort();
  const server = await serve({
    binary: BINARY,
    port,
    command: ['python3', '-m', 'http.server', String(port), '--bind', '::1'],
    readyTimeout: 30,
  });
  try {
    // Root: the server holds the host's [::1] listener and 127.0.0.1 is
    // forwarded to it; rootless the forwarder carries both.
    const forwarded = server.ready.forwarded_loopbacks;
    if (process.getuid() === 0) {
      assert.equal(server.ready.backend, 'direct');
      assert.deepEqual(forwarded, ['127.0.0.1']);
    } else {
      assert.equal(server.ready.backend, 'userspace');
      assert.deepEqual(forwarded, ['127.0.0.1', '::1']);
    }
    for (const host of ['127.0.0.1', '[::1]']) {
      const res = await fetch(`http://${host}:${port}/`, { signal: AbortSignal.timeout(10000) });
      assert.equal(res.status, 200, host);
      await res.text();
    }
    assert.deepEqual((await server.ps()).forwarded_loopbacks, forwarded);
  } finally {
    await server.stop();
  }
});

test('a harness that exits without stop() takes its dev server with it', async () => {
  const port = randomPort();
  const script = `
    import { serve } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
    const s = await serve({ binary: process.env.STOCKADE_BINARY, port: ${port},
      command: ['python3', '-m', 'http.server', '${port}', '--bind', '127.0.0.1'] });
    console.log(s.url);
    process.exit(0);`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH, STOCKADE_BINARY: BINARY, TMPDIR: process.env.TMPDIR ?? '/tmp',
      ...(process.env.XDG_RUNTIME_DIR ? { XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR } : {}) },
    encoding: 'utf8',
  });
  assert.equal(out.trim(), `http://127.0.0.1:${port}/`);
  const t0 = Date.now();
  while ((await ps({ binary: BINARY })).some((e) => e.port === port)) {
    assert.ok(Date.now() - t0 < 10000, 'the server outlived its harness');
    await new Promise((r) => setTimeout(r, 100));
  }
  await assert.rejects(fetch(`http://127.0.0.1:${port}/`));
});
