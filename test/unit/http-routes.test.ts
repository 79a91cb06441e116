import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import { z } from 'zod';
import { mountRoutes, type RouteSpec } from '../../apps/server/src/http/route.js';
import { readBody } from '../../apps/server/src/http/body.js';

/**
 * Routes without parameters are answered from a map before the router; the answers must be the
 * router's: the first declared route that matches wins, and other spellings still reach it.
 */
describe('http: exact paths before the router', () => {
  let server: ReturnType<Koa['listen']>;
  let base: string;
  const calls: string[] = [];
  const route = (method: RouteSpec['method'], path: string, name: string, extra: Partial<RouteSpec> = {}): RouteSpec => ({
    method, path, tag: 't', summary: name, auth: 'none',
    handler: ({ params, body }) => {
      calls.push(name);
      return { name, params: params ?? null, body: body ?? null };
    },
    ...extra,
  });

  before(async () => {
    const routes: RouteSpec[] = [
      route('get', '/items/{id}', 'item', { params: z.object({ id: z.string() }) }),
      route('get', '/items/new', 'new item (shadowed: the router runs /items/{id})'),
      route('get', '/things', 'things'),
      route('post', '/things', 'post things', { body: z.object({ n: z.number() }) }),
      route('get', '/things', 'second things (never runs)'),
    ];
    const app = new Koa();
    const router = new Router();
    const exact = mountRoutes(router, routes, async () => undefined);
    app.use(async (ctx, next) => {
      try {
        await next();
      } catch (err) {
        ctx.status = (err as { status?: number }).status ?? 500;
        ctx.body = { error: (err as Error).message };
      }
    });
    app.use(readBody());
    app.use(exact);
    app.use(router.routes());
    app.use(router.allowedMethods());
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const get = async (path: string) => {
    const r = await fetch(base + path);
    return { status: r.status, body: r.status === 200 ? await r.json() : null };
  };

  it('answers as the router would', async () => {
    calls.length = 0;
    assert.deepEqual(await get('/things'), { status: 200, body: { name: 'things', params: null, body: null } });
    assert.deepEqual(await get('/things/'), { status: 200, body: { name: 'things', params: null, body: null } }); // the router's spelling
    assert.deepEqual(await get('/items/new'), { status: 200, body: { name: 'item', params: { id: 'new' }, body: null } });
    assert.deepEqual(await get('/items/7'), { status: 200, body: { name: 'item', params: { id: '7' }, body: null } });
    const post = await fetch(`${base}/things`, { method: 'POST', body: JSON.stringify({ n: 1 }), headers: { 'content-type': 'application/json' } });
    assert.equal(post.status, 200);
    assert.deepEqual(await post.json(), { name: 'post things', params: null, body: { n: 1 } });
    const bad = await fetch(`${base}/things`, { method: 'POST', body: JSON.stringify({ n: 'x' }), headers: { 'content-type': 'application/json' } });
    assert.equal(bad.status, 400);
    assert.equal((await fetch(`${base}/things`, { method: 'DELETE' })).status, 405);
    assert.equal((await fetch(`${base}/nowhere`)).status, 404);
    assert.deepEqual(calls, ['things', 'things', 'item', 'item', 'post things']);
  });
});
