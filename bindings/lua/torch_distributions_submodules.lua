-- torch.distributions' submodules (torch.distributions.normal, .transforms, .utils, ...) as
-- tables of the names each defines, so that ported imports such as
-- `local Normal = torch.distributions.normal.Normal` work.
local torch = require "torch"
local D = require "torch_distributions"
require "torch_distributions_multivariate"
local H = D._h

local MODULES = {
  bernoulli = "Bernoulli", beta = "Beta", binomial = "Binomial", categorical = "Categorical", cauchy = "Cauchy",
  chi2 = "Chi2", continuous_bernoulli = "ContinuousBernoulli", dirichlet = "Dirichlet", distribution = "Distribution",
  exp_family = "ExponentialFamily", exponential = "Exponential", fishersnedecor = "FisherSnedecor", gamma = "Gamma",
  generalized_pareto = "GeneralizedPareto", geometric = "Geometric", gumbel = "Gumbel", half_cauchy = "HalfCauchy",
  half_normal = "HalfNormal", independent = "Independent", inverse_gamma = "InverseGamma", kumaraswamy = "Kumaraswamy",
  laplace = "Laplace", lkj_cholesky = "LKJCholesky", log_normal = "LogNormal", logistic_normal = "LogisticNormal",
  lowrank_multivariate_normal = "LowRankMultivariateNormal", mixture_same_family = "MixtureSameFamily",
  multinomial = "Multinomial", multivariate_normal = "MultivariateNormal", negative_binomial = "NegativeBinomial",
  normal = "Normal", one_hot_categorical = "OneHotCategorical OneHotCategoricalStraightThrough", pareto = "Pareto",
  poisson = "Poisson", relaxed_bernoulli = "RelaxedBernoulli LogitRelaxedBernoulli",
  relaxed_categorical = "RelaxedOneHotCategorical ExpRelaxedCategorical", studentT = "StudentT",
  transformed_distribution = "TransformedDistribution", uniform = "Uniform", von_mises = "VonMises", weibull = "Weibull",
  wishart = "Wishart",
}
for mod, names in pairs(MODULES) do
  local t = {}
  for name in names:gmatch("%S+") do t[name] = D[name] end
  D[mod] = t
end

-- torch.distributions.utils: the helpers scripts import
local function clamp_probs(p)
  local e = torch.finfo(p.dtype).eps
  return p:clamp(e, 1 - e)
end
D.utils = {
  broadcast_all = H.broadcast_all,
  clamp_probs = clamp_probs,
  logits_to_probs = function(logits, is_binary)
    if is_binary then return logits:sigmoid() end
    return logits:softmax(-1)
  end,
  probs_to_logits = function(probs, is_binary)
    local p = clamp_probs(probs)
    if is_binary then return p:log() - (-p):log1p() end
    return p:log()
  end,
}

return D
