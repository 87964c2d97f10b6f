/* Results and arithmetic flags of the integer ops the emulator runs
 * (virt/insn_internal.h). Checked against the host CPU in the unit tests
 * (tests/unit/test_insn.c, insn_flags_vs_host_cpu). */
#include "virt/insn_internal.h"

uint64_t arith_szp(uint64_t res, unsigned width)
{
	uint64_t f = 0;
	if (!(res & width_mask(width)))
		f |= FL_ZF;
	if (res & (1ull << (8 * width - 1)))
		f |= FL_SF;
	if (!__builtin_parity((unsigned)(res & 0xff))) /* PF: even count in the low byte */
		f |= FL_PF;
	return f;
}

/* a + b + cin and its flags: CF is the carry out, OF a signed overflow (both
 * inputs of one sign, the result of the other), AF the carry out of bit 3. */
uint64_t arith_add(uint64_t a, uint64_t b, unsigned cin, unsigned width, uint64_t *fl)
{
	uint64_t mask = width_mask(width), sign = 1ull << (8 * width - 1);
	a &= mask;
	b &= mask;
	uint64_t res = (a + b + cin) & mask;
	*fl = arith_szp(res, width);
	if (res < a || (cin && res == a))
		*fl |= FL_CF;
	if ((a ^ res) & (b ^ res) & sign)
		*fl |= FL_OF;
	if ((a ^ b ^ res) & 0x10)
		*fl |= FL_AF;
	return res;
}

/* a - b - cin: CF is the borrow (a < b + cin), OF a signed overflow (inputs
 * of different signs, the result's sign not a's), AF the borrow into bit 4. */
uint64_t arith_sub(uint64_t a, uint64_t b, unsigned cin, unsigned width, uint64_t *fl)
{
	uint64_t mask = width_mask(width), sign = 1ull << (8 * width - 1);
	a &= mask;
	b &= mask;
	uint64_t res = (a - b - cin) & mask;
	*fl = arith_szp(res, width);
	if (a < b || (cin && a == b))
		*fl |= FL_CF;
	if ((a ^ b) & (a ^ res) & sign)
		*fl |= FL_OF;
	if ((a ^ b ^ res) & 0x10)
		*fl |= FL_AF;
	return res;
}

/* AND, OR and XOR clear CF and OF (and AF, which the SDM leaves undefined). */
uint64_t arith_alu(enum insn_alu op, uint64_t a, uint64_t b, uint64_t rflags, unsigned width,
		   uint64_t *fl)
{
	unsigned cf = rflags & FL_CF ? 1 : 0;
	uint64_t res;
	switch (op) {
	case INSN_ALU_ADD: return arith_add(a, b, 0, width, fl);
	case INSN_ALU_ADC: return arith_add(a, b, cf, width, fl);
	case INSN_ALU_SUB:
	case INSN_ALU_CMP: return arith_sub(a, b, 0, width, fl);
	case INSN_ALU_SBB: return arith_sub(a, b, cf, width, fl);
	case INSN_ALU_OR: res = a | b; break;
	case INSN_ALU_XOR: res = a ^ b; break;
	case INSN_ALU_AND:
	default: res = a & b; break;
	}
	res &= width_mask(width);
	*fl = arith_szp(res, width);
	return res;
}

uint64_t arith_mul(uint64_t a, uint64_t b, unsigned width, bool sign, uint64_t *hi, uint64_t *fl)
{
	unsigned bits = 8 * width;
	uint64_t mask = width_mask(width), lo;
	bool fits;

	if (sign) {
		__int128 p = (__int128)(int64_t)sext(a, width) * (int64_t)sext(b, width);
		lo = (uint64_t)p & mask;
		*hi = (uint64_t)(p >> bits) & mask;
		fits = (__int128)(int64_t)sext(lo, width) == p;
	} else {
		unsigned __int128 p = (unsigned __int128)(a & mask) * (b & mask);
		lo = (uint64_t)p & mask;
		*hi = (uint64_t)(p >> bits) & mask;
		fits = !*hi;
	}
	*fl = fits ? 0 : FL_CF | FL_OF;
	return lo;
}

bool arith_div(uint64_t hi, uint64_t lo, uint64_t d, unsigned width, bool sign, uint64_t *q,
	       uint64_t *rem)
{
	unsigned bits = 8 * width;
	uint64_t mask = width_mask(width);

	if (!(d & mask))
		return false;
	if (sign) {
		/* The dividend is hi:lo, 2 * width bytes, as a signed number
		 * (shifted unsigned: a signed left shift may overflow). */
		unsigned __int128 u = ((unsigned __int128)(hi & mask) << bits) | (lo & mask);
		unsigned drop = 128 - 2 * bits;
		__int128 n = (__int128)(u << drop) >> drop;
		__int128 dv = (int64_t)sext(d, width);
		if (dv == -1 && n == (__int128)((unsigned __int128)1 << 127))
			return false; /* the one quotient that overflows 128 bits */
		__int128 quot = n / dv, r = n % dv;
		if (quot != (__int128)(int64_t)sext((uint64_t)quot & mask, width))
			return false;
		*q = (uint64_t)quot & mask;
		*rem = (uint64_t)r & mask;
		return true;
	}
	unsigned __int128 n = ((unsigned __int128)(hi & mask) << bits) | (lo & mask);
	unsigned __int128 quot = n / (d & mask);
	if (quot > mask)
		return false;
	*q = (uint64_t)quot;
	*rem = (uint64_t)(n % (d & mask));
	return true;
}

uint64_t arith_shift_double(uint64_t dst, uint64_t src, unsigned count, unsigned width, bool left,
			    uint64_t *fl, uint64_t *defined)
{
	unsigned bits = 8 * width;
	uint64_t mask = width_mask(width), sign = 1ull << (bits - 1), res, cf;
	unsigned __int128 cat;

	dst &= mask;
	src &= mask;
	/* dst:src (SHLD) or src:dst (SHRD) as one 2 * width number, shifted. */
	if (left) { /* CF: the last bit out of the top, bit 2 * width * 8 - count */
		cat = (unsigned __int128)dst << bits | src;
		cf = (uint64_t)(cat >> (2 * bits - count)) & 1;
		res = (uint64_t)((cat << count) >> bits) & mask;
	} else {
		cat = (unsigned __int128)src << bits | dst;
		res = (uint64_t)(cat >> count) & mask;
		cf = (uint64_t)(cat >> (count - 1)) & 1;
	}
	*fl = arith_szp(res, width) | (cf ? FL_CF : 0) | ((res ^ dst) & sign ? FL_OF : 0);
	/* OF only for a 1-bit shift; AF never. */
	*defined = FL_CF | FL_SF | FL_ZF | FL_PF | (count == 1 ? FL_OF : 0);
	return res;
}

bool arith_cond(unsigned cc, uint64_t f)
{
	bool cf = f & FL_CF, zf = f & FL_ZF, sf = f & FL_SF, of = f & FL_OF, pf = f & FL_PF;
	bool r;

	switch (cc >> 1) {
	case 0: r = of; break;
	case 1: r = cf; break;
	case 2: r = zf; break;
	case 3: r = cf || zf; break;
	case 4: r = sf; break;
	case 5: r = pf; break;
	case 6: r = sf != of; break;
	default: r = zf || sf != of; break;
	}
	return cc & 1 ? !r : r;
}
