/**
 * Version 9: PostgreSQL tells every instance when a client changes, so each can cache client reads
 * (`pgClientCache`) and still refuse a rotated or revoked secret, or a deleted client, at once.
 * MySQL and SQLite (and D1) record the version and change nothing: SQLite validates its cache with
 * `PRAGMA data_version`, MySQL has no client cache.
 */
import { sql, type Kysely } from "kysely";
import { TABLES, type SqlFamily } from "../schema.js";

/** The channel the triggers notify and the client cache LISTENs on. */
export const CLIENTS_CHANNEL = "plantgate_clients";
/** The row trigger (INSERT, UPDATE, DELETE) and the statement trigger (TRUNCATE) on pg_clients. */
export const CLIENT_TRIGGERS = ["plantgate_clients_notify", "plantgate_clients_notify_truncate"] as const;
const FUNCTION = "plantgate_clients_notify";

/**
 * A trigger function (in the current schema, beside the table) that, for every changed row, sends
 * `{"s": schema, "k": client_id}` on {@link CLIENTS_CHANNEL}; both the old and the new id when an
 * UPDATE changes the id; `{"s": schema}` alone (meaning "every client") for TRUNCATE or an id too
 * long for a notification (8000 bytes at most; a longer payload would make the write fail). The
 * schema lets a cache ignore another plantgate's schema in the same database. PostgreSQL delivers
 * a notification when (and only if) its transaction commits, whoever wrote: this package, the
 * CLI, another instance, SQL by hand.
 */
export async function clientNotifyUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  if (family !== "postgres") return;
  const clients = sql.table(TABLES.clients);
  // "execute procedure": the spelling every PostgreSQL version takes (11+ also says "function").
  await sql`create or replace function ${sql.ref(FUNCTION)}() returns trigger language plpgsql as $$
declare
  payload text;
begin
  if tg_op = 'TRUNCATE' then
    perform pg_notify(${sql.lit(CLIENTS_CHANNEL)}, json_build_object('s', tg_table_schema)::text);
    return null;
  end if;
  if tg_op <> 'INSERT' then
    payload := json_build_object('s', tg_table_schema, 'k', old.client_id)::text;
    if octet_length(payload) > 7900 then payload := json_build_object('s', tg_table_schema)::text; end if;
    perform pg_notify(${sql.lit(CLIENTS_CHANNEL)}, payload);
  end if;
  if tg_op = 'INSERT' or (tg_op = 'UPDATE' and new.client_id is distinct from old.client_id) then
    payload := json_build_object('s', tg_table_schema, 'k', new.client_id)::text;
    if octet_length(payload) > 7900 then payload := json_build_object('s', tg_table_schema)::text; end if;
    perform pg_notify(${sql.lit(CLIENTS_CHANNEL)}, payload);
  end if;
  return null;
end
$$`.execute(db);
  await sql`create trigger ${sql.ref(CLIENT_TRIGGERS[0])} after insert or update or delete on ${clients} for each row execute procedure ${sql.ref(FUNCTION)}()`.execute(db);
  await sql`create trigger ${sql.ref(CLIENT_TRIGGERS[1])} after truncate on ${clients} for each statement execute procedure ${sql.ref(FUNCTION)}()`.execute(db);
}

export async function clientNotifyDown(db: Kysely<any>, family: SqlFamily): Promise<void> {
  if (family !== "postgres") return;
  for (const trigger of CLIENT_TRIGGERS) await sql`drop trigger if exists ${sql.ref(trigger)} on ${sql.table(TABLES.clients)}`.execute(db);
  await sql`drop function if exists ${sql.ref(FUNCTION)}()`.execute(db);
}
