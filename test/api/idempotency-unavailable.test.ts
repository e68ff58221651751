import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { backends, call, eventually, newTransaction } from '../helpers/harness.ts'
import { suiteContext } from '../helpers/suite.ts'

/**
 * What a request with an Idempotency-Key answers when the database goes away under it, and what its key then
 * does. The database itself plays the outage: triggers fail statements with 57P01 (admin_shutdown, as a
 * failover ends a session), the payment's UPDATE while a flag is set, and the first releases of the key.
 */
for (const backend of backends()) {
  describe(`an Idempotency-Key when the database goes away (${backend})`, () => {
    const ctx = suiteContext(backend)

    const outage = async (releasesToFail: number) => {
      await sql`CREATE TABLE IF NOT EXISTS test_outage (on_update boolean NOT NULL)`.execute(ctx.db)
      await sql`DROP SEQUENCE IF EXISTS test_outage_releases`.execute(ctx.db)
      await sql`CREATE SEQUENCE test_outage_releases`.execute(ctx.db)
      await sql`INSERT INTO test_outage VALUES (true)`.execute(ctx.db)
      await sql
        .raw(`
          CREATE OR REPLACE FUNCTION test_outage_update() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF EXISTS (SELECT 1 FROM test_outage WHERE on_update) THEN
              RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
            END IF;
            RETURN NEW;
          END $$;
          CREATE OR REPLACE FUNCTION test_outage_release() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            -- A sequence: its count survives the failed statement's rollback.
            IF nextval('test_outage_releases') <= ${releasesToFail} THEN
              RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
            END IF;
            RETURN OLD;
          END $$;
          CREATE OR REPLACE TRIGGER test_outage_update BEFORE UPDATE ON transactions
            FOR EACH ROW EXECUTE FUNCTION test_outage_update();
          CREATE OR REPLACE TRIGGER test_outage_release BEFORE DELETE ON idempotency_keys
            FOR EACH ROW EXECUTE FUNCTION test_outage_release();`)
        .execute(ctx.db)
    }
    const databaseBack = () => sql`UPDATE test_outage SET on_update = false`.execute(ctx.db)

    it('the request answers 503 unavailable, and its key is released once the database is back', async () => {
      const created = await call(ctx, 'POST', '/integration/transactions', newTransaction())
      assert.equal(created.statusCode, 201, created.body)
      const path = `/integration/sandbox/transactions/${created.json().uuid}/paid`
      const key = `outage-${created.json().uuid}`
      // The payment's UPDATE fails, and so do the first three attempts to release the key the request claimed.
      await outage(3)
      const first = await call(ctx, 'POST', path, undefined, { idempotencyKey: key })
      assert.equal(first.statusCode, 503, first.body)
      assert.equal(first.json().error.code, 'unavailable')
      assert.equal(first.headers['retry-after'], '1')
      ctx.serverErrors.length = 0
      await databaseBack()
      // The key is not held for its lease (a minute): the release is tried again until it goes through, and
      // the retry then pays the payment.
      const started = Date.now()
      const retried = await eventually(async () => {
        const res = await call(ctx, 'POST', path, undefined, { idempotencyKey: key })
        if (res.statusCode === 200) return res
        assert.equal(res.json().error.code, 'idempotency_request_in_progress', res.body)
        return null
      }, 10_000)
      assert.equal(retried.json().status, 'paid')
      assert.ok(Date.now() - started < 10_000)
      const { rows } = await sql<{ n: string }>`SELECT last_value AS n FROM test_outage_releases`.execute(
        ctx.db,
      )
      assert.ok(Number(rows[0]?.n) > 3, 'the release was tried again after it failed')
    })
  })
}
