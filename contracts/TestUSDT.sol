// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice A stand-in for USDT on a local test chain: 6 decimals like Tether's, the whole initial supply minted
/// to the deployer. Its owner can switch every transfer off, so that a test can make a payout's transfer revert.
/// @dev No compiled artifact is kept in the repository: the tests compile this source at test time with the solc
/// package (test/helpers/solidity.ts), with a pinned compiler, EVM version and optimizer.
contract TestUSDT is ERC20, Ownable {
    /// @notice While true, every transfer (minting aside) reverts with TransfersRefused.
    bool public refuseTransfers;

    error TransfersRefused();

    constructor(uint256 initialSupply) ERC20("Test Tether USD", "USDT") Ownable(msg.sender) {
        _mint(msg.sender, initialSupply);
    }

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }

    function setRefuseTransfers(bool refuse) external onlyOwner {
        refuseTransfers = refuse;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (refuseTransfers && from != address(0)) revert TransfersRefused();
        super._update(from, to, value);
    }
}
