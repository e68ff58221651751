import { type ChildProcess, spawn } from 'node:child_process'
import { pbkdf2Sync } from 'node:crypto'
import { createRequire } from 'node:module'
import path from 'node:path'
import { after, before } from 'node:test'
import {
  type Address,
  type Chain,
  createPublicClient,
  createTestClient,
  createWalletClient,
  type HDAccount,
  http,
  type PublicClient,
  type TestClient,
  type Transport,
  type WalletClient,
} from 'viem'
import { HDKey, hdKeyToAccount } from 'viem/accounts'
import { hardhat } from 'viem/chains'
import { ROOT } from './program.ts'
import { type CompiledContract, compiledContract } from './solidity.ts'

/**
 * A local EVM node for a suite: Hardhat's network (`hardhat node`, test/evm/hardhat.config.cjs) in a process of
 * its own on 127.0.0.1 and a port the kernel picks, with viem clients on it, funded accounts that sign locally,
 * and the TestUSDT token (contracts/TestUSDT.sol, compiled from source by solidity.ts) deployed. Nothing is
 * downloaded: the node, the compiler and the contracts' libraries come from node_modules.
 */

export const HARDHAT_CONFIG = path.join(ROOT, 'test/evm/hardhat.config.cjs')
const HARDHAT_CLI = path.join(ROOT, 'node_modules/hardhat/internal/cli/cli.js')

/** The node answers in about 1 s on an idle machine; a busy one may take several. */
const START_DEADLINE_MS = 30_000
const STOP_GRACE_MS = 5_000
/** How much of the node's output is kept, for the message when it fails. */
const OUTPUT_KEPT = 64 * 1024

/** TestUSDT's initial supply, minted to the deployer: 1 000 000 USDT (6 decimals). */
export const TEST_USDT_SUPPLY = 1_000_000_000_000n

const require = createRequire(import.meta.url)
const config = require(HARDHAT_CONFIG) as {
  networks: { hardhat: { chainId: number; accounts: { mnemonic: string; count: number } } }
}
/** The node's accounts: the config's mnemonic, funded with 10 000 ETH each. */
export const TEST_MNEMONIC = config.networks.hardhat.accounts.mnemonic

export interface EvmNode {
  url: string
  pid: number
  chain: Chain
  /** Polls every 50 ms and caches nothing: a test sees a new block at once. */
  public: PublicClient<Transport, Chain>
  /** Signs locally with `accounts[0]`, the deployer. */
  wallet: WalletClient<Transport, Chain, HDAccount>
  /** Hardhat's own methods: mining, snapshots, the base fee. */
  test: TestClient<'hardhat', Transport, Chain>
  /** The funded accounts (m/44'/60'/0'/0/i of the mnemonic); the first deploys. */
  accounts: HDAccount[]
  /** What the node has printed, its last 64 KiB. */
  output(): string
  /** Stops the node (SIGTERM to its PID, SIGKILL after a grace) and resolves once it has exited. */
  stop(): Promise<void>
}

/** The accounts of the mnemonic: the BIP-39 seed once (PBKDF2), then a derivation per account. */
function testAccounts(mnemonic: string, count: number): HDAccount[] {
  const seed = pbkdf2Sync(mnemonic.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512')
  const root = HDKey.fromMasterSeed(seed)
  return Array.from({ length: count }, (_, addressIndex) => hdKeyToAccount(root, { addressIndex }))
}

/** Resolves with the node's URL once it prints it; fails when it exits first or the deadline passes. */
function waitForUrl(child: ChildProcess, output: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error, url?: string) => {
      clearTimeout(timer)
      child.stdout?.off('data', onData)
      child.off('exit', onExit)
      if (error) reject(error)
      else resolve(url as string)
    }
    const onData = () => {
      const match = /JSON-RPC server at (http:\/\/127\.0\.0\.1:\d+)\//.exec(output())
      if (match) done(undefined, match[1])
    }
    const onExit = (code: number | null, signal: string | null) =>
      done(new Error(`the EVM node exited (${code ?? signal}) before it listened:\n${output()}`))
    const timer = setTimeout(
      () => done(new Error(`the EVM node did not listen within ${START_DEADLINE_MS} ms:\n${output()}`)),
      START_DEADLINE_MS,
    )
    child.stdout?.on('data', onData)
    child.on('exit', onExit)
  })
}

/** Starts a node and waits until it answers JSON-RPC (about 1 s). */
export async function startEvmNode(): Promise<EvmNode> {
  // The CLI itself, not `npx hardhat`: one process, whose PID is the node's.
  const child = spawn(
    process.execPath,
    [HARDHAT_CLI, '--config', HARDHAT_CONFIG, 'node', '--hostname', '127.0.0.1', '--port', '0'],
    {
      cwd: ROOT,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const pid = child.pid
  if (pid === undefined) throw new Error('the EVM node could not be spawned')
  let text = ''
  const keep = (chunk: Buffer) => {
    text = (text + chunk.toString()).slice(-OUTPUT_KEPT)
  }
  // Both pipes are read to the end, so that a chatty node never blocks on a full pipe.
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const running = () => child.exitCode === null && child.signalCode === null
  // Should the test process end without `stop()`, the node goes with it.
  const killOnExit = () => {
    if (running()) process.kill(pid, 'SIGKILL')
  }
  process.once('exit', killOnExit)
  const stop = async () => {
    process.off('exit', killOnExit)
    if (!running()) return
    process.kill(pid, 'SIGTERM')
    const timer = setTimeout(() => running() && process.kill(pid, 'SIGKILL'), STOP_GRACE_MS)
    await exited
    clearTimeout(timer)
  }
  let url: string
  try {
    url = await waitForUrl(child, () => text)
  } catch (error) {
    await stop()
    throw error
  }

  const chain = { ...hardhat, id: config.networks.hardhat.chainId } as Chain
  const transport = http(url, { retryCount: 0 })
  const accounts = testAccounts(TEST_MNEMONIC, config.networks.hardhat.accounts.count)
  const deployer = accounts[0] as HDAccount
  const options = { chain, transport, pollingInterval: 50, cacheTime: 0 }
  return {
    url,
    pid,
    chain,
    public: createPublicClient(options),
    wallet: createWalletClient({ ...options, account: deployer }),
    test: createTestClient({ ...options, mode: 'hardhat' }),
    accounts,
    output: () => text,
    stop,
  }
}

export interface DeployedToken extends CompiledContract {
  address: Address
}

/** Deploys TestUSDT from `accounts[0]`, which then holds `supply` token units and owns the contract. */
export async function deployTestUsdt(node: EvmNode, supply = TEST_USDT_SUPPLY): Promise<DeployedToken> {
  const contract = compiledContract('TestUSDT')
  const hash = await node.wallet.deployContract({
    abi: contract.abi,
    bytecode: contract.bytecode,
    args: [supply],
  })
  const receipt = await node.public.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success' || !receipt.contractAddress)
    throw new Error(`TestUSDT was not deployed: ${receipt.status}`)
  return { ...contract, address: receipt.contractAddress }
}

export interface SuiteEvm {
  node: EvmNode
  usdt: DeployedToken
}

/**
 * A node for the suite this is called in, with TestUSDT deployed: started in its `before` (the contracts compile
 * alongside, the first time in the process), stopped in its `after`. Filled in when the hook runs.
 */
export function suiteEvm(): SuiteEvm {
  const fixture = {} as SuiteEvm
  before(async () => {
    const starting = startEvmNode()
    // solc is synchronous: it runs while the node boots in its own process.
    try {
      compiledContract('TestUSDT')
    } catch (error) {
      await (await starting).stop()
      throw error
    }
    fixture.node = await starting
    fixture.usdt = await deployTestUsdt(fixture.node)
  })
  after(async () => {
    await fixture.node?.stop()
  })
  return fixture
}
