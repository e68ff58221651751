import type { Selectable } from 'kysely'
import type { ChainTransactionStore, Signed, SignedTransaction } from '../../connectors/evm-erc20/store.ts'
import type { Db } from '../../db/index.ts'
import type { ChainTransactionsTable } from '../../db/types.ts'
import { newId } from '../../lib/ids.ts'

type Row = Selectable<ChainTransactionsTable>

const kept = (row: Row): SignedTransaction => ({
  uuid: row.uuid,
  payoutUuid: row.payout_uuid,
  chainId: Number(row.chain_id),
  wallet: row.wallet,
  nonce: Number(row.nonce),
  hash: row.hash as SignedTransaction['hash'],
  raw: row.raw as SignedTransaction['raw'],
  maxFeePerGas: BigInt(row.max_fee_per_gas),
  maxPriorityFeePerGas: BigInt(row.max_priority_fee_per_gas),
  replacesUuid: row.replaces_uuid,
  signedAtBlock: Number(row.signed_at_block),
})

const row = (tx: Omit<SignedTransaction, 'uuid'>, at: Date) => ({
  uuid: newId(),
  payout_uuid: tx.payoutUuid,
  chain_id: tx.chainId,
  wallet: tx.wallet,
  nonce: tx.nonce,
  hash: tx.hash,
  raw: tx.raw,
  max_fee_per_gas: tx.maxFeePerGas.toString(),
  max_priority_fee_per_gas: tx.maxPriorityFeePerGas.toString(),
  replaces_uuid: tx.replacesUuid,
  signed_at_block: tx.signedAtBlock,
  created_at: at,
})

/**
 * The signed payout transactions of `evm-erc20` accounts, in `chain_transactions`, and their hot wallets' nonces
 * in `chain_wallets` (docs/CONNECTORS.md, The evm-erc20 kind).
 */
export function createChainTransactionStore(db: Db): ChainTransactionStore {
  const ofPayout = async (payoutUuid: string, executor: Pick<Db, 'selectFrom'> = db) =>
    (
      await executor
        .selectFrom('chain_transactions')
        .selectAll()
        .where('payout_uuid', '=', payoutUuid)
        .orderBy('created_at')
        .orderBy('nonce')
        .execute()
    ).map(kept)
  return {
    ofPayout: (payoutUuid) => ofPayout(payoutUuid),

    async byHash(hash) {
      const found = await db
        .selectFrom('chain_transactions')
        .selectAll()
        .where('hash', '=', hash)
        .executeTakeFirst()
      return found ? kept(found) : null
    },

    async signFirst({ payoutUuid, chainId, wallet, firstNonce, signedAtBlock, sign }) {
      const at = new Date()
      // A wallet not seen before starts at the chain's count of its transactions.
      await db
        .insertInto('chain_wallets')
        .values({
          chain_id: chainId,
          address: wallet,
          next_nonce: firstNonce,
          created_at: at,
          updated_at: at,
        })
        .onConflict((oc) => oc.columns(['chain_id', 'address']).doNothing())
        .execute()
      return db.transaction().execute(async (trx) => {
        const locked = await trx
          .selectFrom('chain_wallets')
          .select('next_nonce')
          .where('chain_id', '=', chainId)
          .where('address', '=', wallet)
          .forUpdate()
          .executeTakeFirstOrThrow()
        // Under the wallet's lock: a worker that signed this payout's transfer meanwhile has kept it.
        const [before] = await ofPayout(payoutUuid, trx)
        if (before) return before
        const nonce = Number(locked.next_nonce)
        const signed: Signed = await sign(nonce)
        const tx = { payoutUuid, chainId, wallet, nonce, replacesUuid: null, signedAtBlock, ...signed }
        const values = row(tx, at)
        await trx.insertInto('chain_transactions').values(values).execute()
        await trx
          .updateTable('chain_wallets')
          .set({ next_nonce: nonce + 1, updated_at: at })
          .where('chain_id', '=', chainId)
          .where('address', '=', wallet)
          .execute()
        return { ...tx, uuid: values.uuid }
      })
    },

    async keepReplacement(replaced, signed, signedAtBlock) {
      const tx = { ...replaced, ...signed, replacesUuid: replaced.uuid, signedAtBlock }
      const values = row(tx, new Date())
      await db.insertInto('chain_transactions').values(values).execute()
      return { ...tx, uuid: values.uuid }
    },
  }
}
