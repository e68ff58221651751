export { seededRandom } from '../../src/lib/random.ts'
