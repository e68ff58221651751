import assert from 'node:assert/strict'
import { pbkdf2Sync } from 'node:crypto'
import { describe, it } from 'node:test'
import { type Address, BaseError, ContractFunctionRevertedError, parseEther } from 'viem'
import { HDKey, hdKeyToAccount } from 'viem/accounts'
import { checkPayoutAddress } from '../../src/chain/address.ts'
import { depositAddress } from '../../src/chain/deposits.ts'
import {
  minorToTokenUnits,
  tokenBalance,
  tokenUnitsToMinor,
  transferCalldata,
  transfersTo,
} from '../../src/chain/token.ts'
import { suiteEvm, TEST_MNEMONIC, TEST_USDT_SUPPLY } from '../helpers/evm.ts'

/** The node's mnemonic: its account key m/44'/60'/0' gives the deposit addresses by its xpub. */
const rootKey = HDKey.fromMasterSeed(
  pbkdf2Sync(TEST_MNEMONIC.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512'),
)
const accountKey = rootKey.derive("m/44'/60'/0'")
const XPUB = accountKey.publicExtendedKey
/** Deposit indexes past the node's ten funded accounts: addresses that hold nothing yet. */
const DEPOSIT_FROM = 100

describe('TestUSDT on a local node', () => {
  const evm = suiteEvm()

  /** Sends a transfer built from `transferCalldata` from the deployer, and waits for its receipt. */
  async function transfer(to: Address, amount: bigint, gas?: bigint) {
    const hash = await evm.node.wallet.sendTransaction({
      to: evm.usdt.address,
      data: transferCalldata(to, amount),
      gas,
    })
    return evm.node.public.waitForTransactionReceipt({ hash })
  }

  it('is deployed with 6 decimals and its supply held by the deployer', async () => {
    const { node, usdt } = evm
    const read = (functionName: 'decimals' | 'symbol' | 'totalSupply') =>
      node.public.readContract({ address: usdt.address, abi: usdt.abi, functionName })
    assert.equal(await read('decimals'), 6)
    assert.equal(await read('symbol'), 'USDT')
    assert.equal(await read('totalSupply'), TEST_USDT_SUPPLY)
    assert.equal(await tokenBalance(node.public, usdt.address, node.wallet.account.address), TEST_USDT_SUPPLY)
    assert.equal(await tokenBalance(node.public, usdt.address, depositAddress(XPUB, DEPOSIT_FROM)), 0n)
  })

  it('moves a transfer to a deposit address, which its log and the balance show', async () => {
    const { node, usdt } = evm
    const deployer = node.wallet.account.address
    const deposit = depositAddress(XPUB, DEPOSIT_FROM + 1)
    const other = depositAddress(XPUB, DEPOSIT_FROM + 2)
    const before = await node.public.getBlockNumber()
    const payerBefore = await tokenBalance(node.public, usdt.address, deployer)

    const amount = minorToTokenUnits(25_000_000, 6) // 25 USDT
    const receipt = await transfer(deposit, amount)
    assert.equal(receipt.status, 'success')
    assert.ok(receipt.blockNumber > before)
    // another address's transfer, in a later block, which a filter on `deposit` must not return
    const unrelated = await transfer(other, 1n)

    assert.equal(await tokenBalance(node.public, usdt.address, deposit), 25_000_000n)
    assert.equal(tokenUnitsToMinor(await tokenBalance(node.public, usdt.address, deposit), 6), 25_000_000n)
    assert.equal(await tokenBalance(node.public, usdt.address, deployer), payerBefore - amount - 1n)
    // at the block before the transfer, it held nothing
    assert.equal(await tokenBalance(node.public, usdt.address, deposit, receipt.blockNumber - 1n), 0n)

    const head = await node.public.getBlockNumber()
    assert.equal(head, unrelated.blockNumber)
    const logs = await transfersTo(node.public, usdt.address, [deposit], before, head)
    assert.deepEqual(logs, [
      {
        from: deployer,
        to: deposit,
        value: amount,
        blockNumber: receipt.blockNumber,
        blockHash: receipt.blockHash,
        transactionHash: receipt.transactionHash,
        logIndex: 0,
      },
    ])
    const both = await transfersTo(node.public, usdt.address, [other, deposit], before, head)
    assert.deepEqual(
      both.map((log) => [log.to, log.value, log.transactionHash]),
      [
        [deposit, amount, receipt.transactionHash],
        [other, 1n, unrelated.transactionHash],
      ],
    )
    assert.deepEqual(await transfersTo(node.public, usdt.address, [deposit], head, head), [])
    assert.deepEqual(await transfersTo(node.public, usdt.address, [], before, head), [])
  })

  it('lets the wallet that holds the mnemonic move what reached a deposit address', async () => {
    const { node, usdt } = evm
    const index = DEPOSIT_FROM + 3
    const deposit = depositAddress(XPUB, index)
    assert.equal((await transfer(deposit, 7_000_000n)).status, 'success')
    const owner = hdKeyToAccount(rootKey, { addressIndex: index })
    assert.equal(owner.address, deposit)
    await node.test.setBalance({ address: deposit, value: parseEther('1') })
    const hash = await node.wallet.sendTransaction({
      account: owner,
      to: usdt.address,
      data: transferCalldata(node.wallet.account.address, 7_000_000n),
    })
    assert.equal((await node.public.waitForTransactionReceipt({ hash })).status, 'success')
    assert.equal(await tokenBalance(node.public, usdt.address, deposit), 0n)
  })

  it('reverts every transfer while its owner refuses them', async () => {
    const { node, usdt } = evm
    const deposit = depositAddress(XPUB, DEPOSIT_FROM + 4)
    const setRefuse = async (refuse: boolean) => {
      const hash = await node.wallet.writeContract({
        address: usdt.address,
        abi: usdt.abi,
        functionName: 'setRefuseTransfers',
        args: [refuse],
      })
      assert.equal((await node.public.waitForTransactionReceipt({ hash })).status, 'success')
    }
    await setRefuse(true)
    try {
      // the node refuses to estimate a transfer that would revert, and names the contract's error
      await assert.rejects(
        node.public.call({
          account: node.wallet.account,
          to: usdt.address,
          data: transferCalldata(deposit, 1_000_000n),
        }),
        (error: unknown) => {
          assert.ok(error instanceof BaseError, String(error))
          assert.match(error.message, /revert/i)
          return true
        },
      )
      await assert.rejects(
        node.public.simulateContract({
          account: node.wallet.account,
          address: usdt.address,
          abi: usdt.abi,
          functionName: 'transfer',
          args: [deposit, 1_000_000n],
        }),
        (error: unknown) => {
          const revert =
            error instanceof BaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : null
          assert.ok(revert instanceof ContractFunctionRevertedError, String(error))
          assert.equal(revert.data?.errorName, 'TransfersRefused')
          return true
        },
      )
      // sent anyway (its gas given), it is mined, reverted, and moves nothing
      const head = await node.public.getBlockNumber()
      const reverted = await transfer(deposit, 1_000_000n, 100_000n)
      assert.equal(reverted.status, 'reverted')
      assert.equal(reverted.logs.length, 0)
      assert.equal(await tokenBalance(node.public, usdt.address, deposit), 0n)
      assert.deepEqual(
        await transfersTo(node.public, usdt.address, [deposit], head, reverted.blockNumber),
        [],
      )
    } finally {
      await setRefuse(false)
    }
    assert.equal((await transfer(deposit, 1_000_000n)).status, 'success')
    assert.equal(await tokenBalance(node.public, usdt.address, deposit), 1_000_000n)
  })

  it("refuses the token's own address as a payout destination", () => {
    const { usdt } = evm
    const check = checkPayoutAddress(usdt.address.toLowerCase(), usdt.address)
    assert.equal(check.ok ? 'accepted' : check.reason, 'token_contract')
    const deposit = depositAddress(XPUB, DEPOSIT_FROM)
    assert.deepEqual(checkPayoutAddress(deposit.toLowerCase(), usdt.address), { ok: true, address: deposit })
  })
})
