export { CommandFailure, fail, jsonLine, positiveInteger, printJson, printLines, table } from './output.js'
