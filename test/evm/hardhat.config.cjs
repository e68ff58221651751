/**
 * The local EVM node of the chain tests (test/helpers/evm.ts starts it with `hardhat node`): Hardhat's network,
 * served over JSON-RPC on 127.0.0.1. Hardhat compiles nothing here (its compiler downloads solc): the contracts
 * are compiled from source with the solc package (test/helpers/solidity.ts).
 */
module.exports = {
  networks: {
    hardhat: {
      chainId: 31337,
      // Hardhat's well-known test mnemonic: each account holds 10 000 ETH. The helper signs locally with the
      // same keys, as the gateway will, rather than through the node.
      accounts: {
        mnemonic: 'test test test test test test test test test test test junk',
        count: 10,
        accountsBalance: '10000000000000000000000',
      },
      // A block per transaction, at once; a test that needs a mempool turns automine off itself.
      mining: { auto: true, interval: 0 },
      // As a real node: a transaction that reverts is mined and answered with its hash, its receipt says so.
      throwOnTransactionFailures: false,
      // The node would log every call to its stdout.
      loggingEnabled: false,
    },
  },
}
