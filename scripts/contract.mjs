#!/usr/bin/env node
// Writes packages/protocol/test-data/contract.json, the partner API's vocabulary for the kits in other
// languages, from the compiled protocol package: `npm run contract` (it builds first). The protocol's
// tests fail while the file differs from what the code says.
import { writeFileSync } from 'node:fs'
import { contractText } from '@earshot/protocol'

const file = new URL('../packages/protocol/test-data/contract.json', import.meta.url)
writeFileSync(file, contractText())
console.log(`contract: wrote ${file.pathname}`)
