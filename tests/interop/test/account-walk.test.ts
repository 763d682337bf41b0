/**
 * Walks every page of the account listing over the real socket with node-fetch: with 46 accounts
 * created through the admin API plus the bootstrap account (47 in all) and pageSize 20, there are
 * 3 pages and every account appears exactly once.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Fixture, getAccounts, rawClientCredentialsToken, startFixture, stopFixture } from "./helpers.js";

const CREATED = 46;
const PAGE_SIZE = 20;

let fx: Fixture;
beforeAll(async () => {
  fx = await startFixture();
});
afterAll(async () => {
  await stopFixture(fx);
});

interface Page {
  accounts: { id: string; username: string }[];
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}

it(`walks ${CREATED} created accounts (+ the bootstrap one) in pages of ${PAGE_SIZE}, each exactly once`, async () => {
  const created = new Map<string, string>(); // id -> username
  for (let i = 0; i < CREATED; i++) {
    // Passwords are hashed with PLANTGATE_PASSWORD_HASH_ITERATIONS=10000, so this stays fast.
    const account = await fx.server.app.admin.createAccount({ username: `walker-${String(i).padStart(2, "0")}`, password: `password-${i}-long` });
    created.set(account.id, account.username);
  }
  expect(created.size).toBe(CREATED);
  const expected = new Map(created).set(fx.userId, fx.username);

  const token = await rawClientCredentialsToken(fx.url, fx.clientId, fx.clientSecret);
  const seen = new Map<string, number>();
  const pages: Page[] = [];
  for (let page = 1; ; page++) {
    const response = await getAccounts(fx.url, token, `page=${page}&pageSize=${PAGE_SIZE}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Page;
    pages.push(body);
    expect(body).toMatchObject({ page, pageSize: PAGE_SIZE, total: expected.size, totalPages: 3 });
    for (const account of body.accounts) {
      seen.set(account.id, (seen.get(account.id) ?? 0) + 1);
      expect(account.username).toBe(expected.get(account.id));
    }
    if (page >= body.totalPages) break;
    expect(page).toBeLessThan(10); // a broken totalPages must not loop forever
  }

  expect(pages.map((p) => p.accounts.length)).toEqual([20, 20, 7]);
  expect(seen.size).toBe(expected.size);
  for (const id of expected.keys()) expect(seen.get(id), `account ${id}`).toBe(1);
  // In creation order, as documented, across page boundaries: the bootstrap account, then the rest.
  const ids = pages.flatMap((p) => p.accounts.map((a) => a.id));
  expect(ids).toEqual([fx.userId, ...created.keys()]);

  // One past the end: 200 with an empty list.
  const past = await getAccounts(fx.url, token, `page=4&pageSize=${PAGE_SIZE}`);
  expect(past.status).toBe(200);
  expect(await past.json()).toMatchObject({ accounts: [], page: 4, total: expected.size, totalPages: 3 });
});
